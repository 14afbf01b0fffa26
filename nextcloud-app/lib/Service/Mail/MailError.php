<?php

declare(strict_types=1);

namespace OCA\Tamebi\Service\Mail;

/**
 * An error answer of the mail bridge: the HTTP status and the contract's error code
 * (docs/mail-bridge-api.md). The controller turns it into the OCS error body
 * `{"error": code, "message": ...}`; nothing else is ever shown to the caller.
 */
final class MailError extends \RuntimeException {
	public const UNAVAILABLE_MESSAGE = 'Mail is not set up on this Nextcloud';

	private function __construct(
		public readonly int $status,
		public readonly string $errorCode,
		string $message,
	) {
		parent::__construct($message);
	}

	public static function invalid(string $message): self {
		return new self(400, 'invalid_request', $message);
	}

	/** Unknown AND not the caller's: the same answer, so nobody learns what exists (never 403). */
	public static function notFound(string $what): self {
		return new self(404, 'not_found', $what . ' not found');
	}

	public static function unavailable(): self {
		return new self(501, 'mail_unavailable', self::UNAVAILABLE_MESSAGE);
	}

	public static function backend(string $message): self {
		return new self(502, 'mail_backend', $message);
	}
}
