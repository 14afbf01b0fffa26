<?php

declare(strict_types=1);

namespace OCA\Tamebi\Service;

use OCA\Tamebi\Exception\ProxyError;
use OCP\AppFramework\Utility\ITimeFactory;
use OCP\Http\Client\IClientService;
use OCP\IURLGenerator;

/**
 * The OAuth 2 authorization-code flow with PKCE (S256) against this instance's own `oidc` app.
 * Nextcloud is the Authorization Server; the token it issues is a JWT whose `sub` is the uid and
 * whose `aud` is the MCP server, so no identity mapping exists anywhere. Every request names the
 * MCP server it wants a token for in RFC 8707's `resource` parameter (the oidc app stores it with
 * the grant and issues `aud` = resource), so each server gets a token of its own audience.
 *
 * Three moves: the silent loopback authorize (the user's live session answers with a code, no
 * screen), the code exchange, and the refresh grant. It must never forward a browser cookie that
 * is not Nextcloud's own session cookie, and never log a code or token.
 */
class OidcFlow {
	public const SCOPES = 'openid profile offline_access';
	private const TIMEOUT_S = 15;

	public function __construct(
		private AppSettings $settings,
		private IClientService $clientService,
		private IURLGenerator $urlGenerator,
		private ITimeFactory $time,
	) {
	}

	/** Where the oidc app sends codes: our own callback route (a browser only lands there when consent was needed). */
	public function redirectUri(): string {
		return $this->urlGenerator->linkToRouteAbsolute('tamebi.connect.callback');
	}

	/** How this server reaches its own Nextcloud; the public URL unless an internal one is configured. */
	public function baseUrl(): string {
		$internal = $this->settings->get(AppSettings::INTERNAL_URL);
		$base = $internal !== '' ? $internal : $this->urlGenerator->getAbsoluteURL('/');
		return rtrim($base, '/') . '/';
	}

	/** @return array{verifier: string, challenge: string, state: string} */
	public static function newPkce(): array {
		$verifier = self::base64url(random_bytes(32));
		return [
			'verifier' => $verifier,
			'challenge' => self::base64url(hash('sha256', $verifier, true)),
			'state' => self::base64url(random_bytes(16)),
		];
	}

	/** The audience the visible connect flow asks for: mcp-nextcloud's resource URL. */
	public function defaultResource(): ?string {
		return $this->settings->audiences()[AppSettings::DEFAULT_AUDIENCE] ?? null;
	}

	/** @param array{challenge: string, state: string} $pkce */
	public function authorizeUrl(string $base, array $pkce, ?string $resource = null): string {
		$client = $this->client();
		return $base . 'index.php/apps/oidc/authorize?' . http_build_query(self::withResource([
			'response_type' => 'code',
			'client_id' => $client['id'],
			'redirect_uri' => $this->redirectUri(),
			'scope' => self::SCOPES,
			'state' => $pkce['state'],
			'code_challenge' => $pkce['challenge'],
			'code_challenge_method' => 'S256',
		], $resource), '', '&', PHP_QUERY_RFC3986);
	}

	/**
	 * @param array<string, string> $params
	 * @return array<string, string>
	 */
	private static function withResource(array $params, ?string $resource): array {
		if ($resource !== null && $resource !== '') {
			$params['resource'] = $resource;
		}
		return $params;
	}

	/**
	 * Asks /authorize for a code with the given credentials (the user's session cookies, or Basic
	 * auth from `occ tamebi:verify`). Returns null when Nextcloud answers with anything but a
	 * redirect carrying our state and a code (a login or consent page, an error).
	 * @param array<string, string> $credentialHeaders
	 * @param array{verifier: string, challenge: string, state: string} $pkce
	 */
	public function silentCode(array $credentialHeaders, array $pkce, ?string $resource = null): ?string {
		try {
			$response = $this->clientService->newClient()->get($this->authorizeUrl($this->baseUrl(), $pkce, $resource), [
				'headers' => $credentialHeaders,
				'allow_redirects' => false,
				'http_errors' => false,
				'timeout' => self::TIMEOUT_S,
				'nextcloud' => ['allow_local_address' => true],
			]);
		} catch (\Exception $e) {
			throw ProxyError::unreachable('loopback authorize: ' . $e->getMessage(), $e);
		}
		$status = $response->getStatusCode();
		if ($status < 300 || $status >= 400) {
			return null;
		}
		return self::codeFromLocation($response->getHeader('Location'), $pkce['state']);
	}

	/** The code from a redirect Location, only if the state is ours. */
	public static function codeFromLocation(string $location, string $state): ?string {
		$query = parse_url($location, PHP_URL_QUERY);
		if (!is_string($query)) {
			return null;
		}
		parse_str($query, $params);
		$code = $params['code'] ?? null;
		$returned = $params['state'] ?? null;
		if (!is_string($code) || $code === '' || !is_string($returned) || !hash_equals($state, $returned)) {
			return null;
		}
		return $code;
	}

	public function exchangeCode(string $code, string $verifier, ?string $resource = null): TokenSet {
		return $this->tokenRequest(self::withResource([
			'grant_type' => 'authorization_code',
			'code' => $code,
			'redirect_uri' => $this->redirectUri(),
			'code_verifier' => $verifier,
		], $resource));
	}

	/** The refresh token is single use: the caller must keep the new one from the answer. */
	public function refresh(string $refreshToken, ?string $resource = null): TokenSet {
		return $this->tokenRequest(self::withResource(['grant_type' => 'refresh_token', 'refresh_token' => $refreshToken], $resource));
	}

	/**
	 * @param array<string, string> $form
	 * @throws ProxyError when the token endpoint refuses or cannot be reached
	 */
	private function tokenRequest(array $form): TokenSet {
		$client = $this->client();
		$form += ['client_id' => $client['id'], 'client_secret' => $client['secret']];
		try {
			$response = $this->clientService->newClient()->post($this->baseUrl() . 'index.php/apps/oidc/token', [
				'body' => http_build_query($form, '', '&', PHP_QUERY_RFC3986),
				'headers' => ['Content-Type' => 'application/x-www-form-urlencoded', 'Accept' => 'application/json'],
				'http_errors' => false,
				'timeout' => self::TIMEOUT_S,
				'nextcloud' => ['allow_local_address' => true],
			]);
		} catch (\Exception $e) {
			throw ProxyError::unreachable('token endpoint: ' . $e->getMessage(), $e);
		}
		$status = $response->getStatusCode();
		$body = $response->getBody();
		$data = json_decode(is_string($body) ? $body : (string)stream_get_contents($body), true);
		if ($status !== 200 || !is_array($data) || !is_string($data['access_token'] ?? null)) {
			// The body may echo the grant; only the status goes to the log.
			throw ProxyError::unreachable("token endpoint answered $status to grant " . $form['grant_type']);
		}
		$expiresIn = is_int($data['expires_in'] ?? null) ? $data['expires_in'] : 900;
		$refresh = $data['refresh_token'] ?? null;
		return new TokenSet($data['access_token'], is_string($refresh) && $refresh !== '' ? $refresh : null,
			$this->time->getTime() + $expiresIn);
	}

	/** @return array{id: string, secret: string} */
	private function client(): array {
		$client = $this->settings->oidcClient();
		if ($client === null) {
			throw ProxyError::notConfigured('no OIDC client; run occ tamebi:setup');
		}
		return $client;
	}

	/**
	 * Keeps only Nextcloud's own cookies from a Cookie header: `nc_*` (and their `__Host-`
	 * same-site forms), `oc*` (session passphrase, instance cookies) and the session cookie.
	 */
	public static function sessionCookies(string $cookieHeader, string $sessionName): string {
		$kept = [];
		foreach (explode(';', $cookieHeader) as $pair) {
			$pair = trim($pair);
			$eq = strpos($pair, '=');
			if ($eq === false || $eq === 0) {
				continue;
			}
			$name = substr($pair, 0, $eq);
			$bare = str_starts_with($name, '__Host-') ? substr($name, 7) : $name;
			if (str_starts_with($bare, 'nc_') || str_starts_with($bare, 'oc') || ($sessionName !== '' && $name === $sessionName)) {
				$kept[] = $pair;
			}
		}
		return implode('; ', $kept);
	}

	private static function base64url(string $bytes): string {
		return rtrim(strtr(base64_encode($bytes), '+/', '-_'), '=');
	}
}
