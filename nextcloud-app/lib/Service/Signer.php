<?php

declare(strict_types=1);

namespace OCA\Tamebi\Service;

/**
 * G1: proves to the orchestrator that a request comes from this app (the proxy secret) and acts
 * for one user, for one request (an HMAC over the method, path and query it is sent to, uid,
 * time, a nonce, the body and the credentials header). Two secrets on purpose: a bearer alone
 * would let anything that can reach the orchestrator claim any uid.
 * The target is inside the signature (issue #27), so headers captured on their way to one route
 * are refused on every other (a signed read never becomes a delete); the credentials header is
 * inside it, so a user's tokens can never be paired with another user's request; the nonce makes
 * every signed request usable once.
 * It signs the URL it is given exactly as it will be sent: the path (any base path of the
 * configured orchestrator URL included) and the raw query, nothing decoded or reordered. Each
 * attempt on each instance is signed for its own URL.
 * It must never choose the uid itself: callers pass the one from IUserSession.
 * Byte-compatible with the Rust verifier; both are checked against testdata/g1-vectors.json.
 */
final class Signer {
	/** `-v2`: the method, path and query joined the admin signature too. */
	public const ADMIN_PURPOSE = 'tamebi-admin-v2';

	public function __construct(
		private string $proxySecret,
		private string $signingSecret,
	) {
	}

	/**
	 * The path and the raw query of `$url` as the HTTP client sends them: the path as written
	 * ('/' when there is none), the query after '?' ('' when there is none). Nothing is decoded.
	 * @return array{0: string, 1: string}
	 */
	public static function target(string $url): array {
		$path = parse_url($url, PHP_URL_PATH);
		$query = parse_url($url, PHP_URL_QUERY);
		return [is_string($path) && $path !== '' ? $path : '/', is_string($query) ? $query : ''];
	}

	/**
	 * lowercase hex HMAC-SHA256(signing secret, METHOD "\n" path "\n" query "\n" uid "\n" ts "\n"
	 * nonce "\n" hex(sha256(body)) "\n" hex(sha256(credentials header)))
	 */
	public function signature(string $method, string $path, string $query, string $uid, int $ts, string $nonce, string $body, string $credentials): string {
		$signed = $method . "\n" . $path . "\n" . $query . "\n" . $uid . "\n" . $ts . "\n" . $nonce . "\n"
			. hash('sha256', $body) . "\n" . hash('sha256', $credentials);
		return hash_hmac('sha256', $signed, $this->signingSecret);
	}

	/**
	 * The G1 headers for one request of `$method` to `$url` (the full URL it is sent to).
	 * `$credentials` is the exact X-Tamebi-Credentials value ('' sends none); `$nonce` defaults to
	 * a fresh random one.
	 * @return array<string, string>
	 */
	public function headers(string $method, string $url, string $uid, int $ts, string $body, string $credentials = '', ?string $nonce = null): array {
		$nonce ??= bin2hex(random_bytes(16));
		[$path, $query] = self::target($url);
		$headers = [
			'Authorization' => 'Bearer ' . $this->proxySecret,
			'X-Tamebi-Uid' => $uid,
			'X-Tamebi-Ts' => (string)$ts,
			'X-Tamebi-Nonce' => $nonce,
			'X-Tamebi-Signature' => $this->signature($method, $path, $query, $uid, $ts, $nonce, $body, $credentials),
		];
		if ($credentials !== '') {
			$headers['X-Tamebi-Credentials'] = $credentials;
		}
		return $headers;
	}

	/**
	 * lowercase hex HMAC-SHA256(signing secret, "tamebi-admin-v2" "\n" METHOD "\n" path "\n" query
	 * "\n" uid "\n" ts "\n" nonce): the app's statement that `$uid` is a Nextcloud admin, for this
	 * one admin request only. A distinct purpose string, so no user signature can ever stand in
	 * for it.
	 */
	public function adminSignature(string $method, string $path, string $query, string $uid, int $ts, string $nonce): string {
		return hash_hmac('sha256', self::ADMIN_PURPOSE . "\n" . $method . "\n" . $path . "\n" . $query . "\n" . $uid . "\n" . $ts . "\n" . $nonce,
			$this->signingSecret);
	}

	/**
	 * The G1 headers of an admin GET of `$url` (no body, no user token) with the admin signature
	 * over the same target, uid, ts and nonce. Only for a uid IGroupManager::isAdmin() confirmed.
	 * @return array<string, string>
	 */
	public function adminHeaders(string $url, string $uid, int $ts, ?string $nonce = null): array {
		return $this->adminRequestHeaders('GET', $url, $uid, $ts, '', $nonce);
	}

	/**
	 * The G1 headers of an admin request of `$method` to `$url` with `$body` (never a user token),
	 * with the admin signature over the same target, uid, ts and nonce: the registry's changes
	 * (issue #30). Only for a uid IGroupManager::isAdmin() confirmed.
	 * @return array<string, string>
	 */
	public function adminRequestHeaders(string $method, string $url, string $uid, int $ts, string $body, ?string $nonce = null): array {
		$nonce ??= bin2hex(random_bytes(16));
		$headers = $this->headers($method, $url, $uid, $ts, $body, '', $nonce);
		[$path, $query] = self::target($url);
		$headers['X-Tamebi-Admin-Signature'] = $this->adminSignature($method, $path, $query, $uid, $ts, $nonce);
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
