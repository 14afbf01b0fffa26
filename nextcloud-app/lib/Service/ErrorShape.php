<?php

declare(strict_types=1);

namespace OCA\Tamebi\Service;

use OCP\IL10N;

/**
 * The error body the browser sees, as fixed in docs/api.md: a fixed message (in the person's
 * Nextcloud language, through IL10N; docs/api.md gives the English source), plus the request id
 * that joins the UI, nextcloud.log and the orchestrator's log.
 * It must never include anything from an upstream body or an exception: a deny-list of
 * "technical-looking" text always misses one, so nothing variable goes in but the request id.
 * The orchestrator names each refusal with a `code` from a closed set (docs/api.md); a code this
 * table knows, arriving with its own status, picks our text for it and is passed on as it is
 * (a key of our own table, so nothing from upstream). Any other code counts as none: the text
 * is the one for the status.
 */
final class ErrorShape {
	/**
	 * The orchestrator's refusal codes we have a text of our own for, each with its one status
	 * (its text is in {@see codeTexts}; ErrorShapeTest checks both against docs/api.md).
	 */
	private const CODES = [
		'approvals_undecided' => 400,
		'signature_outdated' => 401,
		'message_id_taken' => 409,
		'reply_in_progress' => 409,
		'assistant_bound' => 409,
		'assistant_gone' => 409,
		'registry_conflict' => 409,
		'overloaded' => 429,
		'too_many_running' => 429,
		'too_fast' => 429,
		'unavailable' => 503,
		'owned_elsewhere' => 503,
		'tool_unreachable' => 502,
		'tool_timeout' => 504,
	];

	/**
	 * Our text for each status, in the person's language (every text is a literal IL10N::t()
	 * call, so Nextcloud's translation tooling and our bundle test find it).
	 *
	 * @return array<int, string>
	 */
	private static function statusTexts(IL10N $l): array {
		return [
			400 => $l->t('The request was not understood.'),
			401 => $l->t('Not signed in.'),
			403 => $l->t('This action is not allowed.'),
			404 => $l->t('Not found.'),
			409 => $l->t('A reply is already being written in this conversation.'),
			413 => $l->t('The request is too large.'),
			429 => $l->t('Too many requests. Please wait a moment.'),
			// Not "try again": a request that got no usable answer may have been done (a tool call,
			// a mail sent) and repeating it could do it twice.
			502 => $l->t('A service this needs could not be reached or gave no usable answer. It is not known whether anything was done: check before trying again.'),
			504 => $l->t('No answer came in time. It is not known whether anything was done: check before trying again.'),
		];
	}

	/** @return array<string, string> our text for each code of {@see CODES} */
	private static function codeTexts(IL10N $l): array {
		$status = self::statusTexts($l);
		return [
			'approvals_undecided' => $l->t('Decide every approval this reply asked for, then send them together.'),
			'signature_outdated' => $l->t('The Tamebi app in Nextcloud is older than its server and must be updated. Please tell your administrator.'),
			'message_id_taken' => $l->t('Another message of this conversation already has this id. Send the message under a new id.'),
			'reply_in_progress' => $status[409],
			'assistant_bound' => $l->t('This conversation belongs to another assistant. Start a new conversation to talk to a different one.'),
			'assistant_gone' => $l->t('The assistant of this conversation is no longer offered. Start a new conversation.'),
			'registry_conflict' => $l->t('This name is already taken, is set in the server\'s own configuration, or the entry changed meanwhile. Reload and try again.'),
			'overloaded' => $status[429],
			'too_many_running' => $l->t('You already have several replies being written. Wait for one to finish, then send again.'),
			'too_fast' => $l->t('You are sending messages faster than allowed. Wait a moment, then send again.'),
			'unavailable' => $l->t('The service is restarting. Please try again in a moment.'),
			'owned_elsewhere' => $l->t('This conversation is being served by another server. Please try again in a moment.'),
			'tool_unreachable' => $l->t('The tool could not be reached or gave no usable answer. It is not known whether it did anything: check (for a mail: your Sent folder) before trying again.'),
			'tool_timeout' => $l->t('The tool did not answer in time. It is not known whether it did anything: check (for a mail: your Sent folder) before trying again.'),
		];
	}

	/** The text for `$status` (and a known `$code`) in the language of `$l`. */
	public static function message(IL10N $l, int $status, ?string $code = null): string {
		$known = self::knownCode($status, $code);
		if ($known !== null) {
			return self::codeTexts($l)[$known];
		}
		$texts = self::statusTexts($l);
		if (isset($texts[$status])) {
			return $texts[$status];
		}
		// Any other 4xx is still the client's request being refused; anything else is ours.
		if ($status >= 400 && $status < 500) {
			return $texts[400];
		}
		return $l->t('Something went wrong. Please try again.');
	}

	/** Statuses outside 4xx/5xx never describe an error; a broken upstream becomes 502. */
	public static function status(int $status): int {
		return ($status >= 400 && $status <= 599) ? $status : 502;
	}

	/**
	 * `$code` as our own table's key when it is one we know and it came with its own status
	 * (a known code under another status is a confused or hostile upstream: ignored), else null.
	 */
	public static function knownCode(int $status, ?string $code): ?string {
		return ($code !== null && isset(self::CODES[$code]) && self::CODES[$code] === $status) ? $code : null;
	}

	/** The `code` of an orchestrator error body, unchecked (see knownCode); null when there is none. */
	public static function codeOf(string $body): ?string {
		$decoded = json_decode($body, true);
		$code = is_array($decoded) && is_array($decoded['error'] ?? null) ? ($decoded['error']['code'] ?? null) : null;
		return is_string($code) ? $code : null;
	}

	/**
	 * `$retryAfter` is the whole seconds of the response's own Retry-After header (already
	 * checked to be digits), repeated in the body because the browser's chat transport sees only
	 * the body: a number, never text.
	 *
	 * @return array{error: array{message: string, requestId: string, code?: string, retryAfter?: int}}
	 */
	public static function body(IL10N $l, int $status, string $requestId, ?string $code = null, ?int $retryAfter = null): array {
		$error = ['message' => self::message($l, $status, $code), 'requestId' => $requestId];
		$known = self::knownCode($status, $code);
		if ($known !== null) {
			$error['code'] = $known;
		}
		if ($retryAfter !== null && $retryAfter > 0) {
			$error['retryAfter'] = $retryAfter;
		}
		return ['error' => $error];
	}

	/**
	 * The text of an AI SDK `error` part, for a stream that broke after it started. The
	 * " (request id: …)" suffix stays as it is in every language: it is how the island knows the
	 * sentence is one of ours (it shows it, in the person's language, with the id).
	 */
	public static function streamErrorText(IL10N $l, int $status, string $requestId): string {
		return self::message($l, $status) . ' (request id: ' . $requestId . ')';
	}
}
