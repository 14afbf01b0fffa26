<?php

declare(strict_types=1);

namespace OCA\Tamebi\Service;

/**
 * G1: proves to the orchestrator that a request comes from this app (the proxy secret) and acts
 * for one user (an HMAC over uid, time, a nonce, the body and the credentials header). Two secrets
 * on purpose: a bearer alone would let anything that can reach the orchestrator claim any uid.
 * The credentials header is inside the signature, so a user's tokens can never be paired with
 * another user's request; the nonce makes every signed request usable once.
 * It must never choose the uid itself: callers pass the one from IUserSession.
 * Byte-compatible with the Rust verifier; both are checked against testdata/g1-vectors.json.
 */
final class Signer {
	public const ADMIN_PURPOSE = 'tamebi-admin-v1';

	public function __construct(
		private string $proxySecret,
		private string $signingSecret,
	) {
	}

	/**
	 * lowercase hex HMAC-SHA256(signing secret,
	 * uid "\n" ts "\n" nonce "\n" hex(sha256(body)) "\n" hex(sha256(credentials header)))
	 */
	public function signature(string $uid, int $ts, string $nonce, string $body, string $credentials): string {
		$signed = $uid . "\n" . $ts . "\n" . $nonce . "\n" . hash('sha256', $body) . "\n" . hash('sha256', $credentials);
		return hash_hmac('sha256', $signed, $this->signingSecret);
	}

	/**
	 * The G1 headers for one request. `$credentials` is the exact X-Tamebi-Credentials value
	 * ('' sends none); `$nonce` defaults to a fresh random one.
	 * @return array<string, string>
	 */
	public function headers(string $uid, int $ts, string $body, string $credentials = '', ?string $nonce = null): array {
		$nonce ??= bin2hex(random_bytes(16));
		$headers = [
			'Authorization' => 'Bearer ' . $this->proxySecret,
			'X-Tamebi-Uid' => $uid,
			'X-Tamebi-Ts' => (string)$ts,
			'X-Tamebi-Nonce' => $nonce,
			'X-Tamebi-Signature' => $this->signature($uid, $ts, $nonce, $body, $credentials),
		];
		if ($credentials !== '') {
			$headers['X-Tamebi-Credentials'] = $credentials;
		}
		return $headers;
	}

	/**
	 * lowercase hex HMAC-SHA256(signing secret, "tamebi-admin-v1" "\n" uid "\n" ts "\n" nonce): the
	 * app's statement that `$uid` is a Nextcloud admin, for admin routes only. A distinct purpose
	 * string, so no user signature can ever stand in for it.
	 */
	public function adminSignature(string $uid, int $ts, string $nonce): string {
		return hash_hmac('sha256', self::ADMIN_PURPOSE . "\n" . $uid . "\n" . $ts . "\n" . $nonce, $this->signingSecret);
	}

	/**
	 * The G1 headers of an admin request (no body, no user token) with the admin signature over
	 * the same uid, ts and nonce. Only for a uid IGroupManager::isAdmin() confirmed.
	 * @return array<string, string>
	 */
	public function adminHeaders(string $uid, int $ts, ?string $nonce = null): array {
		$nonce ??= bin2hex(random_bytes(16));
		$headers = $this->headers($uid, $ts, '', '', $nonce);
		$headers['X-Tamebi-Admin-Signature'] = $this->adminSignature($uid, $ts, $nonce);
		return $headers;
	}

	/**
	 * `name=token, name=token` from a map of MCP server name => access token. A name or token that
	 * could not be parsed back unambiguously (RFC 6750 b64token) is left out, never mangled.
	 * @param array<string, string> $tokens
	 */
	public static function credentialsHeader(array $tokens): string {
		$entries = [];
		foreach ($tokens as $name => $token) {
			if (preg_match('/^[A-Za-z0-9_-]{1,64}$/', (string)$name) === 1 && preg_match('#^[A-Za-z0-9\-._~+/]+=*$#', $token) === 1) {
				$entries[] = $name . '=' . $token;
			}
		}
		return implode(', ', $entries);
	}
}
