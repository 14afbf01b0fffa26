<?php

declare(strict_types=1);

namespace OCA\Tamebi\Command;

use OCA\Tamebi\Service\AppSettings;
use OCA\Tamebi\Service\Checks;
use OCA\Tamebi\Service\OidcClients;
use OCA\Tamebi\Service\OidcFlow;
use OCA\Tamebi\Service\Talk\TalkBot;
use OCA\Tamebi\Service\Talk\TalkUnavailable;
use Symfony\Component\Console\Command\Command;
use Symfony\Component\Console\Input\InputInterface;
use Symfony\Component\Console\Input\InputOption;
use Symfony\Component\Console\Output\OutputInterface;

/**
 * `occ tamebi:setup --orchestrator-url URL --mcp-url URL [--rotate-secrets]`
 * Creates (or reuses) the OIDC client, generates the two G1 secrets, stores everything as app
 * config (secrets flagged sensitive) and prints the lines the orchestrator's environment needs.
 * Idempotent: a second run changes nothing unless the URLs change or --rotate-secrets is given.
 *
 * `occ tamebi:setup --talk` installs (or updates) the Talk bot "Tamebi" in Talk's own bot
 * registry (TalkBot); alone it does only that, with the URLs it runs the whole setup first.
 * Without Talk it says so and changes nothing.
 */
class Setup extends Command {
	public function __construct(
		private AppSettings $settings,
		private OidcFlow $flow,
		private Checks $checks,
		private TalkBot $talkBot,
	) {
		parent::__construct();
	}

	protected function configure(): void {
		$this->setName('tamebi:setup')
			->setDescription('Connect Tamebi to its orchestrator and create its OIDC client')
			->addOption('orchestrator-url', null, InputOption::VALUE_REQUIRED, 'Where the Tamebi orchestrator listens, e.g. http://tamebi:8700')
			->addOption('mcp-url', null, InputOption::VALUE_REQUIRED, 'The MCP server URL tokens are issued for (their aud)')
			->addOption('rotate-secrets', null, InputOption::VALUE_NONE, 'Generate new proxy and signing secrets')
			->addOption('talk', null, InputOption::VALUE_NONE, 'Install or update the Talk bot "Tamebi" (needs Talk)');
	}

	protected function execute(InputInterface $input, OutputInterface $output): int {
		$talk = (bool)$input->getOption('talk');
		if ($talk && (string)$input->getOption('orchestrator-url') === '' && (string)$input->getOption('mcp-url') === '') {
			return $this->setupTalk($output);
		}
		$status = $this->setupOrchestrator($input, $output);
		return $status === 0 && $talk ? $this->setupTalk($output) : $status;
	}

	private function setupTalk(OutputInterface $output): int {
		try {
			['action' => $action, 'id' => $id] = $this->talkBot->register();
		} catch (TalkUnavailable) {
			$output->writeln('<error>Talk (the spreed app) is not installed or not enabled, so there is no Talk bot to set up. Nothing was changed.</error>');
			return 1;
		}
		$output->writeln("Talk bot \"" . TalkBot::NAME . "\": $action (bot id $id, webhook " . $this->talkBot->webhookUrl() . ')');
		$output->writeln('A moderator enables it in a conversation: conversation settings, Bots, Tamebi.');
		return 0;
	}

	private function setupOrchestrator(InputInterface $input, OutputInterface $output): int {
		// Several orchestrator instances may be listed, comma separated (routed by conversation).
		try {
			['orchestrators' => $orchestrators, 'mcp' => $mcp] = SetupOptions::parse(
				(string)$input->getOption('orchestrator-url'),
				(string)$input->getOption('mcp-url'),
			);
		} catch (\InvalidArgumentException $e) {
			$output->writeln('<error>' . $e->getMessage() . '</error>');
			return 1;
		}
		$application = $this->getApplication();
		$clients = $application === null ? null : new OidcClients($application);
		if ($clients === null || !$clients->available()) {
			$output->writeln('<error>The oidc app ("OpenID Connect Provider") is not installed or not enabled. Install it first: occ app:install oidc</error>');
			return 1;
		}

		// Validated and available: now change things.
		$this->settings->set(AppSettings::ORCHESTRATOR_URL, SetupOptions::stored($orchestrators));
		$this->settings->set(AppSettings::MCP_URL, $mcp);
		$this->ensureClient($clients, $mcp, $output);
		$this->ensureSecrets((bool)$input->getOption('rotate-secrets'), $output);

		$output->writeln('');
		$output->writeln('Add these lines to the orchestrator\'s environment (and restart it):');
		$output->writeln('TAMEBI_PROXY_SECRET=' . $this->settings->get(AppSettings::PROXY_SECRET));
		$output->writeln('TAMEBI_SIGNING_SECRET=' . $this->settings->get(AppSettings::SIGNING_SECRET));
		$output->writeln('');
		// Setup does not change another app's settings; it says what is missing and how to fix it.
		$bearer = $this->checks->bearerValidation();
		if (!$bearer['ok']) {
			$output->writeln('<comment>Nextcloud will refuse the tokens as Bearer: ' . $bearer['detail'] . '</comment>');
		}
		$output->writeln('Then prove the setup: occ tamebi:verify --user <uid>');
		return 0;
	}

	private function ensureClient(OidcClients $clients, string $mcp, OutputInterface $output): void {
		$current = $this->settings->oidcClient();
		$row = $current === null ? null : $clients->find($current['id']);
		if ($row !== null && OidcClients::matches($row, $mcp)) {
			$output->writeln('OIDC client: reusing ' . $current['id']);
			return;
		}
		$created = $clients->create($this->flow->redirectUri(), $mcp);
		$this->settings->set(AppSettings::OIDC_CLIENT_ID, $created['id']);
		$this->settings->set(AppSettings::OIDC_CLIENT_SECRET, $created['secret']);
		$output->writeln('OIDC client: created ' . $created['id'] . ' (JWT access tokens, resource URL ' . $mcp . ')');
		if ($row !== null) {
			$output->writeln('The previous client ' . $current['id'] . ' no longer matches; remove it with occ oidc:remove.');
		}
	}

	private function ensureSecrets(bool $rotate, OutputInterface $output): void {
		foreach ([AppSettings::PROXY_SECRET, AppSettings::SIGNING_SECRET] as $key) {
			if ($rotate || strlen($this->settings->get($key)) < 64) {
				$this->settings->set($key, bin2hex(random_bytes(32)));
				$output->writeln("Secret $key: " . ($rotate ? 'rotated' : 'generated'));
			}
		}
	}
}
