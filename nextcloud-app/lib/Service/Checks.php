<?php

declare(strict_types=1);

namespace OCA\Tamebi\Service;

use OCP\App\IAppManager;
use OCP\Http\Client\IClientService;
use OCP\IAppConfig;

/**
 * The instance-level proofs that the central invariant can hold: the orchestrator is reachable
 * and accepts our signature, Nextcloud accepts its own tokens as Bearer (user_oidc with bearer
 * validation), and our OIDC client issues JWTs bound to the MCP server. Used by
 * `occ tamebi:verify` and the admin page. Each check is a name, a verdict and a short reason.
 * It must never report a secret, and never change anything.
 */
class Checks {
	/** A uid that is certainly nobody's: the signed probe must succeed without touching real data. */
	public const PROBE_UID = 'tamebi-verify-probe';

	public function __construct(
		private AppSettings $settings,
		private Orchestrator $orchestrator,
		private IClientService $clientService,
		private IAppManager $appManager,
		private IAppConfig $appConfig,
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
			$reply = $this->orchestrator->send('GET', '/v1/conversations', $uid, '', null, 'tamebi-verify-' . bin2hex(random_bytes(4)));
		} catch (\Exception $e) {
			return self::fail($name, $e->getMessage());
		}
		if ($reply->status === 401) {
			return self::fail($name, 'refused (401): the orchestrator has other secrets; copy the lines printed by occ tamebi:setup');
		}
		return $reply->isSuccess() ? self::pass($name, "as $uid") : self::fail($name, "answered {$reply->status}");
	}

	private function bearerValidation(): array {
		$name = 'user_oidc accepts Nextcloud tokens as Bearer';
		if (!$this->appManager->isInstalled('user_oidc')) {
			return self::fail($name, 'user_oidc is not installed');
		}
		$on = $this->appConfig->getValueString('user_oidc', 'oidc_provider_bearer_validation', '');
		return in_array($on, ['1', 'true', 'yes'], true)
			? self::pass($name, 'oidc_provider_bearer_validation is on')
			: self::fail($name, 'run: occ config:app:set --value=1 user_oidc oidc_provider_bearer_validation');
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
