<?php

declare(strict_types=1);

namespace OCA\Tamebi\Service;

use OCA\Tamebi\Exception\ProxyError;
use OCP\AppFramework\Utility\ITimeFactory;
use OCP\IConfig;
use OCP\IRequest;
use OCP\ISession;
use Psr\Log\LoggerInterface;

/**
 * The signed-in user's Nextcloud access tokens, one per MCP server audience: where they live and
 * how they are kept fresh.
 *
 * A token's `aud` is one MCP server (the oidc app's `resource` parameter), so each Nextcloud-facing
 * server gets its own, and mcp-nextcloud's token never reaches another server. They live in the
 * user's PHP session and nowhere else (never the database, never a log). Tokens last 15 minutes, so
 * before each use one is renewed when it has less than a minute left: first with its refresh token
 * (single use; the rotated one replaces it), then, if that fails, by silent re-authorization with
 * the live session; if both fail, that audience has no token and its server's tools are not
 * offered. After a total failure it does not retry that audience for a minute, so a broken setup
 * does not cost two round trips on every request.
 * It must never return a token of anyone but the session's user; it only ever asks with that
 * user's own session or refresh token, and never hands one audience's token out for another.
 */
class TokenService {
	/** Session key: audience name => TokenSet array. */
	public const SESSION_KEY = 'tamebi_tokens';
	/** Session key: audience name => unix time of the last total failure. */
	public const FAILED_KEY = 'tamebi_tokens_failed_at';
	public const MARGIN_S = 60;
	public const RETRY_AFTER_S = 60;

	public function __construct(
		private ISession $session,
		private IRequest $request,
		private IConfig $config,
		private OidcFlow $flow,
		private ITimeFactory $time,
		private LoggerInterface $logger,
		private AppSettings $settings,
	) {
	}

	/**
	 * A usable token for every audience that has one: MCP server name => access token. This map is
	 * what the orchestrator receives (X-Tamebi-Credentials).
	 * @return array<string, string>
	 */
	public function accessTokens(): array {
		$tokens = [];
		foreach ($this->settings->audiences() as $name => $resource) {
			$token = $this->accessToken($name, $resource);
			if ($token !== null) {
				$tokens[$name] = $token;
			}
		}
		return $tokens;
	}

	/** A usable access token for one audience, or null when it cannot be had now. */
	public function accessToken(string $audience = AppSettings::DEFAULT_AUDIENCE, ?string $resource = null): ?string {
		$resource ??= $this->settings->audiences()[$audience] ?? null;
		if ($resource === null) {
			return null;
		}
		$now = $this->time->getTime();
		$current = TokenSet::fromArray($this->stored()[$audience] ?? null);
		if ($current !== null && $current->expiresAt - self::MARGIN_S > $now) {
			return $current->accessToken;
		}
		$failedAt = $this->failures()[$audience] ?? null;
		if ($current === null && is_int($failedAt) && $now - $failedAt < self::RETRY_AFTER_S) {
			return null;
		}
		$renewed = $this->renew($current, $resource);
		if ($renewed === null) {
			$this->forget($audience, $now);
			return null;
		}
		$this->store($renewed, $audience);
		return $renewed->accessToken;
	}

	public function store(TokenSet $tokens, string $audience = AppSettings::DEFAULT_AUDIENCE): void {
		$stored = $this->stored();
		$stored[$audience] = $tokens->toArray();
		$this->session->set(self::SESSION_KEY, $stored);
		$failures = $this->failures();
		unset($failures[$audience]);
		$this->session->set(self::FAILED_KEY, $failures);
	}

	public function isConnected(): bool {
		return $this->accessTokens() !== [];
	}

	private function forget(string $audience, int $now): void {
		$stored = $this->stored();
		unset($stored[$audience]);
		$this->session->set(self::SESSION_KEY, $stored);
		$failures = $this->failures();
		$failures[$audience] = $now;
		$this->session->set(self::FAILED_KEY, $failures);
	}

	/** @return array<string, mixed> */
	private function stored(): array {
		$stored = $this->session->get(self::SESSION_KEY);
		return is_array($stored) ? $stored : [];
	}

	/** @return array<string, mixed> */
	private function failures(): array {
		$failures = $this->session->get(self::FAILED_KEY);
		return is_array($failures) ? $failures : [];
	}

	private function renew(?TokenSet $current, string $resource): ?TokenSet {
		if ($current !== null && $current->refreshToken !== null) {
			try {
				return $this->flow->refresh($current->refreshToken, $resource);
			} catch (ProxyError $e) {
				$this->logger->info('Tamebi: token refresh failed, re-authorizing: ' . $e->getMessage(), ['app' => 'tamebi']);
			}
		}
		try {
			return $this->silentReauthorize($resource);
		} catch (ProxyError $e) {
			$this->logger->warning('Tamebi: silent re-authorization failed: ' . $e->getMessage(), ['app' => 'tamebi']);
			return null;
		}
	}

	/**
	 * Re-runs the authorization-code flow on a loopback call carrying only Nextcloud's own
	 * session cookies. This stays inside the user's authority (same session, same account, their
	 * own request); it works silently because the session is live and consent is on record.
	 */
	private function silentReauthorize(string $resource): ?TokenSet {
		$cookies = OidcFlow::sessionCookies($this->request->getHeader('Cookie'), $this->sessionName());
		if ($cookies === '') {
			return null;
		}
		$pkce = OidcFlow::newPkce();
		// The loopback request opens this same PHP session: release our lock first or it waits forever.
		$this->session->close();
		try {
			$code = $this->flow->silentCode(['Cookie' => $cookies], $pkce, $resource);
		} finally {
			$this->session->reopen();
		}
		return $code === null ? null : $this->flow->exchangeCode($code, $pkce['verifier'], $resource);
	}

	private function sessionName(): string {
		// Nextcloud names its session cookie after the instance id.
		return $this->config->getSystemValueString('instanceid', '');
	}
}
