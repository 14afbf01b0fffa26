<?php

declare(strict_types=1);

namespace OCA\Tamebi\Service;

/** One buffered answer from the orchestrator: status, the headers we may pass on, and the body. */
final class UpstreamReply {
	/** @param array<string, string> $headers lower-cased names */
	public function __construct(
		public readonly int $status,
		public readonly array $headers,
		public readonly string $body,
	) {
	}

	public function header(string $name): ?string {
		return $this->headers[strtolower($name)] ?? null;
	}

	public function isSuccess(): bool {
		return $this->status >= 200 && $this->status < 300;
	}
}
