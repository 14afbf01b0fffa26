<?php

declare(strict_types=1);

namespace OCA\Tamebi\Service\Talk;

use OCA\Tamebi\Service\AppSettings;
use OCP\App\IAppManager;
use OCP\IURLGenerator;

/**
 * Tamebi's Talk bot as Talk's own bot registry holds it: what `occ talk:bot:install` writes
 * (spreed's Install command inserts a BotServer through BotServerMapper; this does the same
 * through the same mapper, so an update keeps the conversations the bot is enabled in and can
 * replace the secret, which occ cannot).
 *
 * The bot is named "Tamebi", its features are webhook + response, its URL is our own webhook
 * route (one bot per URL: Talk's url_hash is unique), and its secret lives only in AppSettings
 * (sensitive) and in Talk's table.
 * It must never be registered without Talk (the caller is told, nothing changes), and never
 * prints its secret.
 */
class TalkBot {
	public const NAME = 'Tamebi';
	public const WEBHOOK_PATH = '/ocs/v2.php/apps/tamebi/api/v1/talk/webhook';
	private const MAPPER = 'OCA\\Talk\\Model\\BotServerMapper';
	private const ENTITY = 'OCA\\Talk\\Model\\BotServer';
	/** spreed's Bot::FEATURE_WEBHOOK | Bot::FEATURE_RESPONSE, and Bot::STATE_ENABLED. */
	private const FEATURES = 1 | 2;
	private const STATE_ENABLED = 1;

	/** @param ?object $mapper Talk's BotServerMapper (null: from the server container when Talk is there) */
	public function __construct(
		private AppSettings $settings,
		private IAppManager $apps,
		private IURLGenerator $urls,
		private ?object $mapper = null,
	) {
	}

	/** Whether Talk is installed and its bot registry can be reached. */
	public function available(): bool {
		return $this->apps->isInstalled('spreed') && $this->mapper() !== null;
	}

	/** The URL Talk posts every message of a conversation with the bot to. */
	public function webhookUrl(): string {
		return $this->urls->getAbsoluteURL(self::WEBHOOK_PATH);
	}

	/**
	 * Installs the bot or brings it up to date (name, URL, features, enabled, our secret).
	 * @return array{action: 'installed'|'updated'|'unchanged', id: int}
	 * @throws TalkUnavailable without Talk (nothing changed)
	 */
	public function register(): array {
		$mapper = $this->mapper();
		if (!$this->apps->isInstalled('spreed') || $mapper === null) {
			throw new TalkUnavailable('Talk (spreed) is not installed or not enabled');
		}
		$url = $this->webhookUrl();
		$secret = $this->secret();
		try {
			$bot = $mapper->findByUrl($url);
		} catch (\OCP\AppFramework\Db\DoesNotExistException) {
			$bot = null;
		}
		if ($bot === null) {
			$class = self::ENTITY;
			$bot = new $class();
			$this->describe($bot, $url, $secret);
			$bot = $mapper->insert($bot);
			return ['action' => 'installed', 'id' => (int)$bot->getId()];
		}
		if ($bot->getName() === self::NAME && $bot->getSecret() === $secret && $bot->getFeatures() === self::FEATURES
			&& $bot->getState() === self::STATE_ENABLED) {
			return ['action' => 'unchanged', 'id' => (int)$bot->getId()];
		}
		$this->describe($bot, $url, $secret);
		$mapper->update($bot);
		return ['action' => 'updated', 'id' => (int)$bot->getId()];
	}

	/**
	 * For the repair step and Talk's enabling: registers again only a bot that was set up
	 * before (a secret is stored); does nothing without Talk. True when it registered.
	 */
	public function refresh(): bool {
		if ($this->settings->get(AppSettings::TALK_BOT_SECRET) === '' || !$this->available()) {
			return false;
		}
		$this->register();
		return true;
	}

	private function describe(object $bot, string $url, string $secret): void {
		$bot->setName(self::NAME);
		$bot->setUrl($url);
		$bot->setUrlHash(sha1($url));
		$bot->setSecret($secret);
		$bot->setDescription('Answers mentions of Tamebi in this conversation. It acts for nobody: it sees no files, calendars or mail.');
		$bot->setState(self::STATE_ENABLED);
		$bot->setFeatures(self::FEATURES);
	}

	/** Our secret: kept once made, so a re-registration does not break a working bot. */
	private function secret(): string {
		$secret = $this->settings->get(AppSettings::TALK_BOT_SECRET);
		if (strlen($secret) < 64) {
			$secret = bin2hex(random_bytes(32));
			$this->settings->set(AppSettings::TALK_BOT_SECRET, $secret);
		}
		return $secret;
	}

	private function mapper(): ?object {
		if ($this->mapper !== null) {
			return $this->mapper;
		}
		if (!class_exists(self::MAPPER) || !$this->apps->isInstalled('spreed')) {
			return null;
		}
		try {
			return $this->mapper = \OCP\Server::get(self::MAPPER);
		} catch (\Throwable) {
			return null;
		}
	}
}
