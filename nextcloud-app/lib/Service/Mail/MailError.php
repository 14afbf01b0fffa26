<?php

declare(strict_types=1);

namespace OCA\Tamebi\Service\Mail;

use OCA\Tamebi\Http\ApiError;

/**
 * An error answer of the mail bridge: the HTTP status and the contract's error code
 * (docs/mail-bridge-api.md). Like every OCS error of the app ({@see ApiError}) it becomes the body
 * `{"error": code, "message": ...}`; nothing else is ever shown to the caller. The shared codes
 * (`invalid_request`, `not_found`, `internal_error`) come from ApiError; these are the bridge's own.
 *
 * The message is the bridge's own fixed text. What Mail, IMAP or SMTP said travels only as the
 * previous exception, which the controller logs (nextcloud.log) and never answers with: a
 * server's reply can name hosts, accounts or other people's addresses.
 */
final class MailError extends ApiError {
	public const UNAVAILABLE_MESSAGE = 'Mail is not set up on this Nextcloud';
	public const SEND_UNKNOWN_MESSAGE = 'Mail could not tell whether the message went out: it may have been sent. '
		. 'Check the Sent mailbox before sending it again.';
	public const INTERNAL_MESSAGE = 'The mail bridge failed; the details are in the Nextcloud log';
	public const NO_SENT_MAILBOX_MESSAGE = 'This mail account has no Sent folder set, so Mail sends nothing from it. '
		. 'Choose one in Mail (account settings, Default folders), then send again. Nothing was sent.';
	public const NO_DRAFTS_MAILBOX_MESSAGE = 'This mail account has no Drafts folder set, so Mail saves no draft in it. '
		. 'Choose one in Mail (account settings, Default folders), then try again. Nothing was saved.';

	public static function unavailable(): self {
		return new self(501, 'mail_unavailable', self::UNAVAILABLE_MESSAGE);
	}

	/** Mail, IMAP or SMTP failed and nothing was sent or stored; `$message` is fixed text. */
	public static function backend(string $message, ?\Throwable $cause = null): self {
		return new self(502, 'mail_backend', $message, $cause);
	}

	/**
	 * The account is not set up to send: Mail refuses to send from an account without a Sent
	 * mailbox (its send chain stops before SMTP). Only the person can fix it, in Mail's settings,
	 * so it is 409 with its own code: trying again unchanged gives the same answer.
	 */
	public static function noSentMailbox(): self {
		return new self(409, 'no_sent_mailbox', self::NO_SENT_MAILBOX_MESSAGE);
	}

	/**
	 * The account has no Drafts mailbox: Mail refuses to save a draft (ClientException 'No drafts
	 * mailbox configured'). Like {@see noSentMailbox}: only the person can fix it, so 409.
	 */
	public static function noDraftsMailbox(): self {
		return new self(409, 'no_drafts_mailbox', self::NO_DRAFTS_MAILBOX_MESSAGE);
	}

	/**
	 * A send whose outcome nobody knows (Mail's "unclear sent state", or a failure once Mail had
	 * started sending): it must not be retried blindly, or the mail may go out twice.
	 */
	public static function sendOutcomeUnknown(?\Throwable $cause = null): self {
		return new self(502, 'send_outcome_unknown', self::SEND_UNKNOWN_MESSAGE, $cause);
	}
}
