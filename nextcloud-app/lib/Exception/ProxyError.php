<?php

declare(strict_types=1);

namespace OCA\Tamebi\Exception;

/**
 * The one error type of the app. Each named constructor is one way a request can fail, and says
 * what the browser sees: only the HTTP status (and, from the orchestrator, its refusal code),
 * which ErrorShape turns into a fixed message. The detail is for the log and must never reach a
 * response body.
 */
final class ProxyError extends \RuntimeException {
	private function __construct(
		private int $status,
		string $detail,
		?\Throwable $previous = null,
		private ?int $retryAfter = null,
		private ?string $refusalCode = null,
	) {
		parent::__construct($detail, 0, $previous);
	}

	/** Bad input from the browser (G1: a uid in the body lands here too). Not logged as an error. */
	public static function badRequest(string $detail): self {
		return new self(400, $detail);
	}

	public static function tooLarge(string $detail): self {
		return new self(413, $detail);
	}

	/** The app has not been set up with `occ tamebi:setup`. */
	public static function notConfigured(string $detail): self {
		return new self(503, $detail);
	}

	/**
	 * The orchestrator answered with an error status; that status is passed through, and so is
	 * its Retry-After (whole seconds) on a 429 or 503, so the browser knows when to try again.
	 * `$code` is the body's refusal code as it came: ErrorShape alone decides whether it counts.
	 */
	public static function upstream(int $status, string $detail, ?int $retryAfter = null, ?string $code = null): self {
		return new self($status, $detail, null, in_array($status, [429, 503], true) ? $retryAfter : null, $code);
	}

	/** The orchestrator (or Nextcloud itself, on a loopback call) could not be reached. */
	public static function unreachable(string $detail, ?\Throwable $previous = null): self {
		return new self(502, $detail, $previous);
	}

	public function status(): int {
		return $this->status;
	}

	/** The orchestrator's refusal code, unchecked (ErrorShape::knownCode checks it). */
	public function refusalCode(): ?string {
		return $this->refusalCode;
	}

	/** Seconds the browser should wait before trying again, when the orchestrator said so. */
	public function retryAfter(): ?int {
		return $this->retryAfter;
	}

	/** Client mistakes are expected traffic; only server-side failures are worth an error log line. */
	public function isServerSide(): bool {
		return $this->status >= 500;
	}
}
