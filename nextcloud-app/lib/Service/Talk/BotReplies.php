<?php

declare(strict_types=1);

namespace OCA\Tamebi\Service\Talk;

use OCA\Tamebi\Service\AppSettings;
use OCA\Tamebi\Service\OidcFlow;
use OCP\Http\Client\IClientService;
use Psr\Log\LoggerInterface;

/**
 * Posts the bot's messages with Talk's bot message API:
 * `POST /ocs/v2.php/apps/spreed/api/v1/bot/{token}/message`, `X-Nextcloud-Talk-Bot-Random` and
 * `X-Nextcloud-Talk-Bot-Signature` = hex HMAC-SHA256(bot secret, random + message text), body
 * `{message, replyTo, referenceId}`. The URL is our own Nextcloud's (the internal URL when one
 * is set), never the X-Nextcloud-Talk-Backend header of a webhook, which the signature does
 * not cover.
 * One attempt per reply: Talk keeps no record of reference ids, so a retry after a lost answer
 * could post twice; the reference id (derived from the mention) lets anyone reading the room
 * match a reply to its mention.
 */
class BotReplies {
	private const TIMEOUT_S = 10;

	public function __construct(
		private AppSettings $settings,
		private OidcFlow $flow,
		private IClientService $clients,
		private LoggerInterface $logger,
	) {
	}

	/** The reference id of the reply to message `$messageId` in `$token`: the same on every attempt. */
	public static function referenceId(string $token, int $messageId): string {
		return hash('sha256', "tamebi-talk-reply\n$token\n$messageId");
	}

	/** Posts `$text` as a reply to `$messageId`; true when Talk took it (201). */
	public function post(string $token, int $messageId, string $text): bool {
		$secret = $this->settings->get(AppSettings::TALK_BOT_SECRET);
		if ($secret === '') {
			return false;
		}
		$random = bin2hex(random_bytes(32));
		$body = json_encode(['message' => $text, 'replyTo' => $messageId, 'referenceId' => self::referenceId($token, $messageId)],
			JSON_THROW_ON_ERROR | JSON_UNESCAPED_UNICODE);
		try {
			$response = $this->clients->newClient()->post($this->flow->baseUrl() . 'ocs/v2.php/apps/spreed/api/v1/bot/' . rawurlencode($token) . '/message', [
				'headers' => [
					'OCS-APIRequest' => 'true',
					'Accept' => 'application/json',
					'Content-Type' => 'application/json',
					'X-Nextcloud-Talk-Bot-Random' => $random,
					'X-Nextcloud-Talk-Bot-Signature' => hash_hmac('sha256', $random . $text, $secret),
				],
				'body' => $body,
				'timeout' => self::TIMEOUT_S,
				'http_errors' => false,
				'nextcloud' => ['allow_local_address' => true],
			]);
		} catch (\Throwable $e) {
			$this->logger->error('Tamebi: could not post a reply to Talk: {error}', ['error' => $e->getMessage()]);
			return false;
		}
		if ($response->getStatusCode() !== 201) {
			$this->logger->error('Tamebi: Talk refused the bot reply with HTTP {status}', ['status' => $response->getStatusCode()]);
			return false;
		}
		return true;
	}
}
