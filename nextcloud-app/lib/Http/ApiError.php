<?php

declare(strict_types=1);

namespace OCA\Tamebi\Http;

/**
 * An error answer of one of the app's OCS APIs: the HTTP status, a stable machine-readable code
 * and a fixed message. {@see OcsAnswers} turns it into the one error body every OCS route of the
 * app answers with, `{"error": code, "message": ...}`; nothing else about a failure is ever shown
 * to the caller.
 *
 * The message is our own fixed text. What a backend said (Mail, IMAP, the orchestrator, a database)
 * travels only as the previous exception, which is logged to nextcloud.log and never answered with:
 * a backend's words can name hosts, accounts or other people.
 *
 * Each API may narrow this with a subclass of its own codes ({@see \OCA\Tamebi\Service\Mail\MailError});
 * the named constructors here are the codes every API shares.
 */
class ApiError extends \RuntimeException {
	/** The fixed message of `internal_error`; a subclass may name its own part of the app. */
	public const INTERNAL_MESSAGE = 'The Tamebi app failed; the details are in the Nextcloud log';

	final protected function __construct(
		public readonly int $status,
		public readonly string $errorCode,
		string $message,
		?\Throwable $cause = null,
	) {
		parent::__construct($message, 0, $cause);
	}

	/** The request itself is wrong; `$message` says what to change (it is shown to the caller). */
	public static function invalid(string $message): static {
		return new static(400, 'invalid_request', $message);
	}

	/** Unknown AND not the caller's: the same answer, so nobody learns what exists (never 403). */
	public static function notFound(string $what): static {
		return new static(404, 'not_found', $what . ' not found');
	}

	/**
	 * The caller is signed in but the route is for administrators. Nextcloud's own middleware
	 * refuses first on routes without #[NoAdminRequired]; this is the second lock, asked again
	 * of IGroupManager by {@see OcsAnswers::forAdmin}.
	 */
	public static function forbidden(): static {
		return new static(403, 'forbidden', 'This is for Nextcloud administrators only');
	}

	/** Anything the route did not expect (a bug, an app release with other signatures). */
	public static function internal(\Throwable $cause): static {
		return new static(500, 'internal_error', static::INTERNAL_MESSAGE, $cause);
	}
}
