<?php

declare(strict_types=1);

namespace OCA\Tamebi\Service\Talk;

use OCA\Tamebi\Service\AppSettings;
use Psr\Log\LoggerInterface;

/**
 * Receives one Talk webhook and decides, at once, what follows (an [[Incoming]]).
 *
 * Order matters, and nothing is read from a request before it is proven:
 * 1. the signature, `hex(HMAC-SHA256(bot secret, X-Nextcloud-Talk-Random + raw body))`, over
 *    the exact bytes, compared in constant time (`hash_equals`);
 * 2. the random must not have been used in the replay window ([[Limits::firstUse]]);
 * 3. only then is the body parsed. A message that does not address the bot (its name at the
 *    start, or "@Tamebi" anywhere) is dropped here: never stored, logged or sent anywhere;
 * 4. who wrote it: `users/<uid>` may start a turn, `guests/…` gets one short reply, anything
 *    else (federated users, bots, system messages) gets nothing;
 * 5. the per-room and per-person rate limits.
 * A refused webhook is logged with its reason only, never its body.
 */
class Webhook {
	/** Talk sends 64 characters of [A-Za-z0-9+/]; anything outside 32-256 is refused before hashing. */
	private const RANDOM = '#^[A-Za-z0-9+/=]{32,256}$#D';
	private const SIGNATURE = '#^[0-9a-fA-F]{64}$#D';

	public function __construct(
		private AppSettings $settings,
		private Limits $limits,
		private LoggerInterface $logger,
	) {
	}

	public function receive(string $raw, string $random, string $signature): Incoming {
		$secret = $this->settings->get(AppSettings::TALK_BOT_SECRET);
		if ($secret === '') {
			return $this->refuse('the Talk bot is not set up (occ tamebi:setup --talk)');
		}
		if (preg_match(self::RANDOM, $random) !== 1 || preg_match(self::SIGNATURE, $signature) !== 1) {
			return $this->refuse('missing or malformed signature headers');
		}
		if (!hash_equals(hash_hmac('sha256', $random . $raw, $secret), strtolower($signature))) {
			return $this->refuse('bad signature');
		}
		if (!$this->limits->ready()) {
			$this->logger->error('Tamebi: the Talk webhook needs a memory cache (APCu, Redis or Memcached) to refuse replays; refusing every webhook until one is configured');
			return Incoming::refused();
		}
		if (!$this->limits->firstUse($random)) {
			return $this->refuse('replayed random');
		}
		return $this->classify(json_decode($raw, true));
	}

	private function refuse(string $reason): Incoming {
		$this->logger->warning('Tamebi: refused a Talk webhook: {reason}', ['reason' => $reason]);
		return Incoming::refused();
	}

	private function classify(mixed $body): Incoming {
		if (!is_array($body) || ($body['type'] ?? null) !== 'Create') {
			return Incoming::ignored(); // Join, Leave, Activity, reactions: nothing to answer
		}
		$token = $body['target']['id'] ?? null;
		$messageId = $body['object']['id'] ?? null;
		$content = json_decode((string)($body['object']['content'] ?? ''), true);
		$text = is_array($content) && is_string($content['message'] ?? null) ? $content['message'] : null;
		$actor = $body['actor']['id'] ?? null;
		if (!is_string($token) || preg_match('/^[A-Za-z0-9]{1,32}$/D', $token) !== 1 || !is_string($actor)
			|| !(is_string($messageId) || is_int($messageId)) || !ctype_digit((string)$messageId) || $text === null) {
			return Incoming::ignored();
		}
		if (!self::addresses($text)) {
			return Incoming::ignored();
		}
		[$type, $id] = array_pad(explode('/', $actor, 2), 2, '');
		$messageId = (int)$messageId;
		if ($type === 'guests') {
			return $this->limits->take("room/$token", Limits::PER_ROOM) ? Incoming::guest($token, $messageId) : Incoming::ignored();
		}
		if ($type !== 'users' || $id === '') {
			return Incoming::ignored();
		}
		$question = self::question($text);
		if (!$this->limits->take("room/$token", Limits::PER_ROOM)) {
			return $this->limits->noticeOnce("room/$token") ? Incoming::limited($token, $messageId, 'room') : Incoming::ignored();
		}
		if (!$this->limits->take("user/$id", Limits::PER_USER)) {
			return $this->limits->noticeOnce("user/$id") ? Incoming::limited($token, $messageId, 'user') : Incoming::ignored();
		}
		return Incoming::turn($token, $messageId, $id, $question);
	}

	/** Whether the message speaks to the bot: its name first ("Tamebi, …"), or "@Tamebi" anywhere. */
	public static function addresses(string $text): bool {
		$name = preg_quote(TalkBot::NAME, '/');
		return preg_match('/^\s*@?"?' . $name . '"?(?![\p{L}\p{N}_])/iu', $text) === 1
			|| preg_match('/(?<![\p{L}\p{N}_])@"?' . $name . '"?(?![\p{L}\p{N}_])/iu', $text) === 1;
	}

	/** The question without the leading address ("@Tamebi, what …" → "what …"). */
	public static function question(string $text): string {
		$name = preg_quote(TalkBot::NAME, '/');
		$question = preg_replace('/^\s*@?"?' . $name . '"?[\s,:;!.\-]*/iu', '', $text);
		return trim(is_string($question) ? $question : $text);
	}
}
