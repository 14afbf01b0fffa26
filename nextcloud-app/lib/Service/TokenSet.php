<?php

declare(strict_types=1);

namespace OCA\Tamebi\Service;

/** A user's access token, its refresh token (single use, rotates) and when the access token expires. */
final class TokenSet {
	public function __construct(
		public readonly string $accessToken,
		public readonly ?string $refreshToken,
		public readonly int $expiresAt,
	) {
	}

	/** @return array{a: string, r: ?string, e: int} the form kept in the PHP session */
	public function toArray(): array {
		return ['a' => $this->accessToken, 'r' => $this->refreshToken, 'e' => $this->expiresAt];
	}

	public static function fromArray(mixed $data): ?self {
		if (!is_array($data) || !is_string($data['a'] ?? null) || !is_int($data['e'] ?? null)) {
			return null;
		}
		$refresh = $data['r'] ?? null;
		return new self($data['a'], is_string($refresh) ? $refresh : null, $data['e']);
	}
}
