<?php

declare(strict_types=1);

namespace OCA\Tamebi\Service;

/**
 * G1: proves to the orchestrator that a request comes from this app (the proxy secret) and acts
 * for one user (an HMAC over uid, time and body). Two secrets on purpose: a bearer alone would let
 * anything that can reach the orchestrator claim any uid.
 * It must never choose the uid itself: callers pass the one from IUserSession.
 * Byte-compatible with the Rust verifier; both are checked against testdata/g1-vectors.json.
 */
final class Signer {
	public function __construct(
		private string $proxySecret,
		private string $signingSecret,
	) {
	}

	/** lowercase hex HMAC-SHA256(signing secret, uid "\n" ts "\n" hex(sha256(body))) */
	public function signature(string $uid, int $ts, string $body): string {
		$signed = $uid . "\n" . $ts . "\n" . hash('sha256', $body);
		return hash_hmac('sha256', $signed, $this->signingSecret);
	}

	/** @return array<string, string> the G1 headers for one request */
	public function headers(string $uid, int $ts, string $body): array {
		return [
			'Authorization' => 'Bearer ' . $this->proxySecret,
			'X-Tamebi-Uid' => $uid,
			'X-Tamebi-Ts' => (string)$ts,
			'X-Tamebi-Signature' => $this->signature($uid, $ts, $body),
		];
	}
}
