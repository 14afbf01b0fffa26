<?php

declare(strict_types=1);

namespace OCA\Tamebi\Service;

use OCA\Tamebi\AppInfo\Application;
use OCA\Tamebi\Exception\ProxyError;
use OCP\IAppConfig;

/**
 * The app's whole configuration, typed, in one place: what `occ tamebi:setup` writes and every
 * other class reads. Secrets are stored with IAppConfig's sensitive flag, so Nextcloud hides them
 * from config listings and the admin page.
 * It must never hold a user credential: those live in the user's PHP session only (TokenService).
 */
class AppSettings {
	public const ORCHESTRATOR_URL = 'orchestrator_url';
	public const MCP_URL = 'mcp_url';
	public const PROXY_SECRET = 'proxy_secret';
	public const SIGNING_SECRET = 'signing_secret';
	public const OIDC_CLIENT_ID = 'oidc_client_id';
	public const OIDC_CLIENT_SECRET = 'oidc_client_secret';
	/** Optional: how this server reaches its own Nextcloud (loopback), when the public URL does not resolve inside. */
	public const INTERNAL_URL = 'internal_url';
	/**
	 * Optional: further Nextcloud-facing MCP servers, JSON {"name": "https://…/mcp"}. Each gets a
	 * token of its own audience; names must match the orchestrator's TAMEBI_MCP_SERVERS entries
	 * marked auth=nextcloud.
	 */
	public const MCP_AUDIENCES = 'mcp_audiences';
	/** The Talk bot's shared secret (`occ tamebi:setup --talk`): signs replies, verifies webhooks. */
	public const TALK_BOT_SECRET = 'talk_bot_secret';
	/** The server name mcp-nextcloud is configured under (TAMEBI_MCP_SERVERS=nextcloud=…;auth=nextcloud). */
	public const DEFAULT_AUDIENCE = 'nextcloud';

	private const SENSITIVE = [self::PROXY_SECRET, self::SIGNING_SECRET, self::OIDC_CLIENT_SECRET, self::TALK_BOT_SECRET];

	public function __construct(
		private IAppConfig $appConfig,
	) {
	}

	public function get(string $key): string {
		return $this->appConfig->getValueString(Application::APP_ID, $key, '');
	}

	public function set(string $key, string $value): void {
		$sensitive = in_array($key, self::SENSITIVE, true);
		$this->appConfig->setValueString(Application::APP_ID, $key, $value, false, $sensitive);
	}

	/** The first configured orchestrator URL ('' when none). */
	public function orchestratorUrl(): string {
		return $this->orchestratorUrls()[0] ?? '';
	}

	/**
	 * Every configured orchestrator instance (the setting may list several, comma separated).
	 * @return list<string>
	 */
	public function orchestratorUrls(): array {
		// A value set around `occ tamebi:setup` (occ config:app:set) gets the same check.
		return array_values(array_filter(Router::urls($this->get(self::ORCHESTRATOR_URL)), [self::class, 'validUrl']));
	}

	public function mcpUrl(): string {
		return $this->get(self::MCP_URL);
	}

	/**
	 * Every MCP server audience the user gets a token for: server name => resource URL (the `aud`
	 * of its tokens). mcp-nextcloud under its default name, then any extra ones; invalid entries are
	 * left out rather than guessed at.
	 * @return array<string, string>
	 */
	public function audiences(): array {
		$audiences = [];
		if (self::validUrl($this->mcpUrl())) {
			$audiences[self::DEFAULT_AUDIENCE] = $this->mcpUrl();
		}
		$extra = json_decode($this->get(self::MCP_AUDIENCES), true);
		foreach (is_array($extra) ? $extra : [] as $name => $url) {
			if (is_string($name) && preg_match('/^[A-Za-z0-9_-]{1,64}$/', $name) === 1 && is_string($url) && self::validUrl($url)
				&& !isset($audiences[$name])) {
				$audiences[$name] = $url;
			}
		}
		return $audiences;
	}

	/** @throws ProxyError 503 when setup has not run */
	public function signer(): Signer {
		$proxy = $this->get(self::PROXY_SECRET);
		$signing = $this->get(self::SIGNING_SECRET);
		if ($proxy === '' || $signing === '' || $this->orchestratorUrl() === '') {
			throw ProxyError::notConfigured('orchestrator URL or secrets missing; run occ tamebi:setup');
		}
		return new Signer($proxy, $signing);
	}

	/** The OIDC client used for the user's token, or null when setup has not created one. */
	public function oidcClient(): ?array {
		$id = $this->get(self::OIDC_CLIENT_ID);
		$secret = $this->get(self::OIDC_CLIENT_SECRET);
		return ($id === '' || $secret === '') ? null : ['id' => $id, 'secret' => $secret];
	}

	/**
	 * Validates an operator-given URL: absolute http(s), a port (if any) of 1-65535, no
	 * credentials, no query (paths are appended to it; a `?` would swallow them), no fragment.
	 * Not FILTER_VALIDATE_URL: it refuses host names with `_`, which container names such as
	 * `tamebi_orchestrator` have and which HTTP clients resolve fine.
	 */
	public static function validUrl(string $url): bool {
		if (preg_match('/[\s\x00-\x1f\x7f?]/', $url) === 1) {
			return false;
		}
		$parts = parse_url($url);
		$host = is_array($parts) ? ($parts['host'] ?? '') : '';
		$hostOk = preg_match('/^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9_.-]*[A-Za-z0-9])?)$/', $host) === 1
			&& !str_contains($host, '..');
		return is_array($parts)
			&& $hostOk
			&& preg_match('#^[A-Za-z][A-Za-z0-9+.-]*://#', $url) === 1
			&& in_array(strtolower($parts['scheme'] ?? ''), ['http', 'https'], true)
			&& (!isset($parts['port']) || ($parts['port'] >= 1 && $parts['port'] <= 65535))
			&& !isset($parts['user'])
			&& !isset($parts['fragment']);
	}
}
