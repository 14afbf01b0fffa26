<?php

declare(strict_types=1);

namespace OCA\Tamebi\Service;

use OCP\App\IAppManager;
use OCP\Http\Client\IClientService;
use OCP\IAppConfig;
use OCP\IConfig;

/**
 * The instance-level proofs that the central invariant can hold: the orchestrator is reachable
 * and accepts our signature, Nextcloud accepts its own tokens as Bearer (user_oidc with bearer
 * validation), and our OIDC client issues JWTs bound to the MCP server. Used by
 * `occ tamebi:verify` and the admin page. Each check is a name, a verdict and a short reason.
 * It must never report a secret or a token, and never change anything.
 *
 * The bearer check reads what user_oidc itself reads (lib/User/Backend.php, getCurrentUserId,
 * user_oidc 7.0 to 8.x): the *system* config `user_oidc` => ['oidc_provider_bearer_validation'
 * => true], compared with `=== true`, which makes user_oidc ask the oidc app to validate the
 * token; or, failing that, a user_oidc provider with the `checkBearer` setting, whose keys
 * validate self-encoded JWTs. A configuration read is only a diagnosis: with a user's token,
 * `userToken()` proves it on WebDAV, and that answer decides.
 */
class Checks {
	/** A uid that is certainly nobody's: the signed probe must succeed without touching real data. */
	public const PROBE_UID = 'tamebi-verify-probe';
	public const BEARER_CHECK = 'user_oidc accepts Nextcloud tokens as Bearer';
	/** The one documented way to turn the oidc-app path on (a boolean, as user_oidc compares with === true). */
	public const BEARER_FIX = 'occ config:system:set user_oidc oidc_provider_bearer_validation --value=true --type=boolean';

	public function __construct(
		private AppSettings $settings,
		private Orchestrator $orchestrator,
		private IClientService $clientService,
		private IAppManager $appManager,
		private IAppConfig $appConfig,
		private IConfig $config,
		private OidcFlow $flow,
	) {
	}

	/** @return list<array{name: string, ok: bool, detail: string}> */
	public function instance(?string $uid = null, ?OidcClients $clients = null): array {
		$results = [$this->orchestratorHealth(), $this->orchestratorSignature($uid ?? self::PROBE_UID), $this->bearerValidation()];
		if ($clients !== null) {
			$results[] = $this->oidcClient($clients);
		} else {
			$results[] = $this->oidcConfigured();
		}
		return $results;
	}

	private function orchestratorHealth(): array {
		$name = 'orchestrator reachable (GET /healthz)';
		$url = $this->settings->orchestratorUrl();
		if ($url === '') {
			return self::fail($name, 'no orchestrator URL; run occ tamebi:setup');
		}
		try {
			$response = $this->clientService->newClient()->get($url . '/healthz', [
				'http_errors' => false, 'timeout' => 5, 'nextcloud' => ['allow_local_address' => true]]);
			$status = $response->getStatusCode();
			return $status === 200 ? self::pass($name, $url) : self::fail($name, "answered $status");
		} catch (\Exception $e) {
			return self::fail($name, $e->getMessage());
		}
	}

	private function orchestratorSignature(string $uid): array {
		$name = 'orchestrator accepts our signature (signed GET /v1/conversations)';
		try {
			$reply = $this->orchestrator->send('GET', '/v1/conversations', $uid, '', [], 'tamebi-verify-' . bin2hex(random_bytes(4)));
		} catch (\Exception $e) {
			return self::fail($name, $e->getMessage());
		}
		if ($reply->status === 401) {
			// The signature covers the method, path and query as sent (docs/api.md): besides other
			// secrets, a proxy that rewrites the path (strips a prefix) or the query fails it.
			if (ErrorShape::codeOf($reply->body) === 'signature_outdated') {
				return self::fail($name, 'refused (401, signature_outdated): the orchestrator expects a newer signature; update this app to the orchestrator\'s version');
			}
			return self::fail($name, 'refused (401): the orchestrator has other secrets, or something between us changes the request path or query '
				. '(a reverse proxy that strips a path prefix or rewrites URLs); copy the lines printed by occ tamebi:setup, '
				. 'and let the orchestrator URL reach it without rewriting');
		}
		return $reply->isSuccess() ? self::pass($name, "as $uid") : self::fail($name, "answered {$reply->status}");
	}

	/** What user_oidc's configuration says about Bearer tokens; a diagnosis, not a proof. */
	public function bearerValidation(): array {
		$name = self::BEARER_CHECK;
		if (!$this->appManager->isInstalled('user_oidc')) {
			return self::fail($name, 'user_oidc is not installed and enabled: occ app:install user_oidc, then ' . self::BEARER_FIX);
		}
		$system = $this->config->getSystemValue('user_oidc', []);
		$system = is_array($system) ? $system : [];
		$flag = $system['oidc_provider_bearer_validation'] ?? null;
		if ($flag === true) {
			return self::pass($name, 'system config user_oidc.oidc_provider_bearer_validation is true: the oidc app validates its own tokens');
		}
		if ($flag !== null) {
			return self::fail($name, 'system config user_oidc.oidc_provider_bearer_validation is ' . var_export($flag, true)
				. ', but user_oidc accepts only the boolean true; run: ' . self::BEARER_FIX);
		}
		$providers = $this->bearerCheckingProviders($system);
		if ($providers !== []) {
			return self::pass($name, 'no oidc_provider_bearer_validation, but user_oidc provider(s) ' . implode(', ', $providers)
				. ' check Bearer tokens against their own keys (their aud must be the provider\'s client id unless '
				. 'selfencoded_bearer_validation_audience_check is false); only --user proves it for our tokens');
		}
		$legacy = $this->userOidcAppValue('oidc_provider_bearer_validation') !== ''
			? ' (the app config key user_oidc/oidc_provider_bearer_validation is set, but user_oidc never reads it)' : '';
		return self::fail($name, "user_oidc validates no Bearer tokens$legacy; run: " . self::BEARER_FIX);
	}

	/**
	 * Ids of user_oidc providers whose `checkBearer` setting is on (app config
	 * `provider-<id>-checkBearer` = '1', as ProviderService stores it), when user_oidc has a
	 * validator left to use for them.
	 * @return list<string>
	 */
	private function bearerCheckingProviders(array $system): array {
		$selfEncoded = !isset($system['selfencoded_bearer_validation']) || (bool)$system['selfencoded_bearer_validation'];
		$userInfo = (bool)($system['userinfo_bearer_validation'] ?? false);
		if (!$selfEncoded && !$userInfo) {
			return [];
		}
		$ids = [];
		foreach ($this->appConfig->getKeys('user_oidc') as $key) {
			if (preg_match('/^provider-(\d+)-checkBearer$/', $key, $m) === 1
				&& $this->userOidcAppValue($key) === '1') {
				$ids[] = '#' . $m[1];
			}
		}
		return $ids;
	}

	/** A user_oidc app-config value, whether stored lazy (user_oidc 8.2+ stores its settings so) or not. */
	private function userOidcAppValue(string $key): string {
		$value = $this->appConfig->getValueString('user_oidc', $key, '');
		return $value !== '' ? $value : $this->appConfig->getValueString('user_oidc', $key, '', true);
	}

	/**
	 * The proof with a real token of `$uid`: Nextcloud's own WebDAV accepts it as Bearer (this
	 * decides the bearer check, whatever the configuration read said), refuses a tampered copy,
	 * and the token is bound to the MCP server (aud) and names the user (sub).
	 * @return list<array{name: string, ok: bool, detail: string}>
	 */
	public function userToken(string $uid, string $token): array {
		$diagnosis = $this->bearerValidation();
		$status = $this->propfind($uid, $token);
		if ($status === 207) {
			$bearer = self::pass(self::BEARER_CHECK, "proven: WebDAV answered 207 to a fresh token of $uid"
				. ($diagnosis['ok'] ? '' : ' (the configuration read said: ' . $diagnosis['detail'] . ')'));
		} else {
			$bearer = self::fail(self::BEARER_CHECK, 'WebDAV answered ' . ($status ?? 'nothing') . " to a fresh token of $uid, expected 207; "
				. $diagnosis['detail']);
		}
		$tampered = $this->propfind($uid, self::tamper($token));
		return [
			$bearer,
			$tampered === 401 ? self::pass('tampered token is refused', 'WebDAV answered 401')
				: self::fail('tampered token is refused', 'WebDAV answered ' . ($tampered ?? 'nothing') . ', expected 401'),
			$this->claims($uid, $token),
		];
	}

	/**
	 * The instance checks with the proof merged in: when the proof contains the bearer check,
	 * it replaces the configuration read (a real token on WebDAV decides; the read only explains).
	 */
	public static function decidedBy(array $instance, array $proof): array {
		if (in_array(self::BEARER_CHECK, array_column($proof, 'name'), true)) {
			$instance = array_values(array_filter($instance, fn ($r) => $r['name'] !== self::BEARER_CHECK));
		}
		return array_merge($instance, $proof);
	}

	/** The status of a Depth-0 PROPFIND on the user's files root with this Bearer; null when unreachable. */
	private function propfind(string $uid, string $token): ?int {
		$url = $this->flow->baseUrl() . 'remote.php/dav/files/' . rawurlencode($uid) . '/';
		try {
			return $this->clientService->newClient()->request('PROPFIND', $url, [
				'headers' => ['Authorization' => 'Bearer ' . $token, 'Depth' => '0'],
				'http_errors' => false, 'timeout' => 15, 'nextcloud' => ['allow_local_address' => true]])->getStatusCode();
		} catch (\Exception) {
			return null;
		}
	}

	private function claims(string $uid, string $token): array {
		$name = 'token aud = MCP URL and sub = uid';
		$parts = explode('.', $token);
		$payload = count($parts) === 3 ? json_decode((string)base64_decode(strtr($parts[1], '-_', '+/'), true), true) : null;
		if (!is_array($payload)) {
			return self::fail($name, 'not a JWT: the client must use --token_type=jwt');
		}
		$aud = (array)($payload['aud'] ?? []);
		$mcp = $this->settings->mcpUrl();
		if (!in_array($mcp, $aud, true)) {
			return self::fail($name, 'aud is ' . implode(', ', $aud) . ", expected $mcp");
		}
		return ($payload['sub'] ?? null) === $uid ? self::pass($name, "aud $mcp, sub $uid") : self::fail($name, 'sub is not the uid');
	}

	/** Flips one character of the signature, keeping the token well-formed. */
	public static function tamper(string $token): string {
		$last = substr($token, -2, 1);
		return substr($token, 0, -2) . ($last === 'A' ? 'B' : 'A') . substr($token, -1);
	}

	private function oidcConfigured(): array {
		$name = 'OIDC client configured';
		return $this->settings->oidcClient() === null
			? self::fail($name, 'no client; run occ tamebi:setup')
			: self::pass($name, 'client ' . $this->settings->get(AppSettings::OIDC_CLIENT_ID));
	}

	private function oidcClient(OidcClients $clients): array {
		$name = 'OIDC client issues JWTs for the MCP server';
		$client = $this->settings->oidcClient();
		if (!$clients->available()) {
			return self::fail($name, 'the oidc app is not installed or not enabled');
		}
		if ($client === null) {
			return self::fail($name, 'no client; run occ tamebi:setup');
		}
		$row = $clients->find($client['id']);
		if ($row === null) {
			return self::fail($name, 'the stored client no longer exists; run occ tamebi:setup');
		}
		return OidcClients::matches($row, $this->settings->mcpUrl())
			? self::pass($name, 'token_type jwt, resource_url ' . $this->settings->mcpUrl())
			: self::fail($name, 'token type or resource URL differ; run occ tamebi:setup');
	}

	public static function pass(string $name, string $detail): array {
		return ['name' => $name, 'ok' => true, 'detail' => $detail];
	}

	public static function fail(string $name, string $detail): array {
		return ['name' => $name, 'ok' => false, 'detail' => $detail];
	}
}
