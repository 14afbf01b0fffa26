<?php

declare(strict_types=1);

namespace OCA\Tamebi\Service;

/**
 * The error body the browser sees, as fixed in docs/api.md: a generic message chosen by status,
 * plus the request id that joins the UI, nextcloud.log and the orchestrator's log.
 * It must never include anything from an upstream body or an exception: a deny-list of
 * "technical-looking" text always misses one, so nothing variable goes in but the request id.
 */
final class ErrorShape {
	private const MESSAGES = [
		400 => 'The request was not understood.',
		401 => 'Not signed in.',
		403 => 'This action is not allowed.',
		404 => 'Not found.',
		409 => 'A reply is already being written in this conversation.',
		413 => 'The request is too large.',
		429 => 'Too many requests. Please wait a moment.',
		// Not "try again": a request that got no usable answer may have been done (a tool call,
		// a mail sent) and repeating it could do it twice.
		502 => 'A service this needs could not be reached or gave no usable answer. It is not known whether anything was done: check before trying again.',
		504 => 'No answer came in time. It is not known whether anything was done: check before trying again.',
	];
	private const SERVER_ERROR = 'Something went wrong. Please try again.';

	public static function message(int $status): string {
		if (isset(self::MESSAGES[$status])) {
			return self::MESSAGES[$status];
		}
		// Any other 4xx is still the client's request being refused; anything else is ours.
		if ($status >= 400 && $status < 500) {
			return self::MESSAGES[400];
		}
		return self::SERVER_ERROR;
	}

	/** Statuses outside 4xx/5xx never describe an error; a broken upstream becomes 502. */
	public static function status(int $status): int {
		return ($status >= 400 && $status <= 599) ? $status : 502;
	}

	/** @return array{error: array{message: string, requestId: string}} */
	public static function body(int $status, string $requestId): array {
		return ['error' => ['message' => self::message($status), 'requestId' => $requestId]];
	}

	/** The text of an AI SDK `error` part, for a stream that broke after it started. */
	public static function streamErrorText(int $status, string $requestId): string {
		return self::message($status) . ' (request id: ' . $requestId . ')';
	}
}
