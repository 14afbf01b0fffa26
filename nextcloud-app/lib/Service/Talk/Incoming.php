<?php

declare(strict_types=1);

namespace OCA\Tamebi\Service\Talk;

/**
 * What one webhook leads to, decided before Talk gets its answer: refused (401), ignored
 * (200, nothing follows), or 200 and then one reply in the room: a turn, the short answer for a
 * guest, or the rate-limit notice. Carries only what the reply needs.
 */
final class Incoming {
	private function __construct(
		public readonly string $kind,
		public readonly string $token = '',
		public readonly int $messageId = 0,
		public readonly string $uid = '',
		public readonly string $question = '',
		public readonly string $limit = '',
	) {
	}

	public static function refused(): self {
		return new self('refused');
	}

	public static function ignored(): self {
		return new self('ignored');
	}

	public static function guest(string $token, int $messageId): self {
		return new self('guest', $token, $messageId);
	}

	public static function limited(string $token, int $messageId, string $which): self {
		return new self('limited', $token, $messageId, limit: $which);
	}

	public static function turn(string $token, int $messageId, string $uid, string $question): self {
		return new self('turn', $token, $messageId, $uid, $question);
	}

	/** Whether anything is posted to the room after the answer. */
	public function needsReply(): bool {
		return in_array($this->kind, ['guest', 'limited', 'turn'], true);
	}
}
