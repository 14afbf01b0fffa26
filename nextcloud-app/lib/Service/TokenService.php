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
 * The signed-in user's Nextcloud access token: where it lives and how it is kept fresh.
 *
 * It lives in the user's PHP session and nowhere else (never the database, never a log). Tokens
 * last 15 minutes, so before each use it is renewed when it has less than a minute left:
 * first with the refresh token (single use; the rotated one replaces it), then, if that fails,
 * by silent re-authorization with the live session; if both fail, there is no token and chat
 * goes on without workspace tools. After a total failure it does not retry for a minute, so a
 * broken setup does not cost two round trips on every request.
 * It must never return a token of anyone but the session's user; it only ever asks with that
 * user's own session or refresh token.
 */
class TokenService {
	public const SESSION_KEY = 'tamebi_token';
	public const FAILED_KEY = 'tamebi_token_failed_at';
	public const MARGIN_S = 60;
	public const RETRY_AFTER_S = 60;

	public function __construct(
		private ISession $session,
		private IRequest $request,
		private IConfig $config,
		private OidcFlow $flow,
		private ITimeFactory $time,
		private LoggerInterface $logger,
	) {
	}

	/** A usable access token for the session's user, or null when workspace access is not connected. */
	public function accessToken(): ?string {
		$now = $this->time->getTime();
		$current = TokenSet::fromArray($this->session->get(self::SESSION_KEY));
		if ($current !== null && $current->expiresAt - self::MARGIN_S > $now) {
			return $current->accessToken;
		}
		$failedAt = $this->session->get(self::FAILED_KEY);
		if ($current === null && is_int($failedAt) && $now - $failedAt < self::RETRY_AFTER_S) {
			return null;
		}
		$renewed = $this->renew($current);
		if ($renewed === null) {
			$this->session->remove(self::SESSION_KEY);
			$this->session->set(self::FAILED_KEY, $now);
			return null;
		}
		$this->store($renewed);
		return $renewed->accessToken;
	}

	public function store(TokenSet $tokens): void {
		$this->session->set(self::SESSION_KEY, $tokens->toArray());
		$this->session->remove(self::FAILED_KEY);
	}

	public function isConnected(): bool {
		return $this->accessToken() !== null;
	}

	private function renew(?TokenSet $current): ?TokenSet {
		if ($current !== null && $current->refreshToken !== null) {
			try {
				return $this->flow->refresh($current->refreshToken);
			} catch (ProxyError $e) {
				$this->logger->info('Tamebi: token refresh failed, re-authorizing: ' . $e->getMessage(), ['app' => 'tamebi']);
			}
		}
		try {
			return $this->silentReauthorize();
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
	private function silentReauthorize(): ?TokenSet {
		$cookies = OidcFlow::sessionCookies($this->request->getHeader('Cookie'), $this->sessionName());
		if ($cookies === '') {
			return null;
		}
		$pkce = OidcFlow::newPkce();
		// The loopback request opens this same PHP session: release our lock first or it waits forever.
		$this->session->close();
		try {
			$code = $this->flow->silentCode(['Cookie' => $cookies], $pkce);
		} finally {
			$this->session->reopen();
		}
		return $code === null ? null : $this->flow->exchangeCode($code, $pkce['verifier']);
	}

	private function sessionName(): string {
		// Nextcloud names its session cookie after the instance id.
		return $this->config->getSystemValueString('instanceid', '');
	}
}
