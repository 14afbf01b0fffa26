<?php

declare(strict_types=1);

namespace OCA\Tamebi\Service\Registry;

use OCA\Tamebi\Exception\ProxyError;
use OCA\Tamebi\Service\AppSettings;
use OCA\Tamebi\Service\Orchestrator;
use OCA\Tamebi\Service\UpstreamReply;

/**
 * What the admin page changes in the orchestrator's registry (issue #30): MCP servers, assistants,
 * approvals of shared personal assistants, and the policy for personal assistants. Every request
 * goes over the orchestrator's admin routes with the admin signature, which
 * {@see \OCA\Tamebi\Http\OcsAnswers::forAdmin} lets happen only after IGroupManager::isAdmin; no
 * user token ever travels with it. The registry lives in the orchestrator's database, never here.
 *
 * For a Nextcloud-facing server (auth=nextcloud) it does what `occ tamebi:setup` does for
 * mcp-nextcloud: the server's URL becomes an audience of the app's OIDC client (an entry of
 * mcp_audiences), so each person's token for it exists; no new credential is created anywhere.
 */
class AdminRegistry {
	public const SERVERS = '/v1/admin/servers';
	public const ASSISTANTS = '/v1/admin/assistants';
	public const POLICY = '/v1/admin/policy';

	public function __construct(
		private Orchestrator $orchestrator,
		private AppSettings $settings,
	) {
	}

	/** @return array{servers: list<array<string, mixed>>} */
	public function servers(string $uid, string $requestId): array {
		$body = $this->call('GET', self::SERVERS, $uid, $requestId);
		return ['servers' => is_array($body['servers'] ?? null) ? $body['servers'] : []];
	}

	/** @param array<string, mixed> $in */
	public function createServer(string $uid, array $in, string $requestId): array {
		$spec = Validation::server($in, array_column($this->servers($uid, $requestId)['servers'], 'name'));
		$answer = $this->call('POST', self::SERVERS, $uid, $requestId, $spec);
		$this->audience($spec);
		return $answer;
	}

	/** @param array<string, mixed> $in */
	public function updateServer(string $uid, string $name, array $in, string $requestId): array {
		$spec = Validation::server(['name' => $name] + $in, []);
		if (($in['name'] ?? $name) !== $name) {
			throw RegistryError::invalid('A server cannot be renamed: remove it and register it again.');
		}
		$answer = $this->call('PUT', self::SERVERS . '/' . rawurlencode($name), $uid, $requestId, $spec);
		$this->audience($spec);
		return $answer;
	}

	public function deleteServer(string $uid, string $name, string $requestId): array {
		self::checkName($name);
		$this->call('DELETE', self::SERVERS . '/' . rawurlencode($name), $uid, $requestId);
		$this->audience(['name' => $name, 'auth' => 'none', 'url' => '']);
		return [];
	}

	/** @return array{assistants: list<array<string, mixed>>, proposed: list<array<string, mixed>>, policy: array<string, mixed>} */
	public function assistants(string $uid, string $requestId): array {
		$body = $this->call('GET', self::ASSISTANTS, $uid, $requestId);
		return [
			'assistants' => is_array($body['assistants'] ?? null) ? $body['assistants'] : [],
			'proposed' => is_array($body['proposed'] ?? null) ? $body['proposed'] : [],
			'policy' => is_array($body['policy'] ?? null) ? $body['policy'] : [],
		];
	}

	/** @param array<string, mixed> $in */
	public function createAssistant(string $uid, array $in, string $requestId): array {
		$taken = array_column($this->assistants($uid, $requestId)['assistants'], 'name');
		$spec = Validation::assistant($in, $taken, $this->tools($uid, $requestId));
		return $this->call('POST', self::ASSISTANTS, $uid, $requestId, $spec);
	}

	/** @param array<string, mixed> $in */
	public function updateAssistant(string $uid, string $name, array $in, string $requestId): array {
		if (($in['name'] ?? $name) !== $name) {
			throw RegistryError::invalid('An assistant cannot be renamed: create a new one and remove this one.');
		}
		$spec = Validation::assistant(['name' => $name] + $in, [], $this->tools($uid, $requestId));
		return $this->call('PUT', self::ASSISTANTS . '/' . rawurlencode($name), $uid, $requestId, $spec);
	}

	public function deleteAssistant(string $uid, string $name, string $requestId): array {
		self::checkName($name);
		$this->call('DELETE', self::ASSISTANTS . '/' . rawurlencode($name), $uid, $requestId);
		return [];
	}

	/** Approves `version` of a shared personal assistant (the version the admin looked at). */
	public function approve(string $uid, string $id, mixed $version, string $requestId): array {
		if (preg_match('/^u-[0-9a-f]{32}$/', $id) !== 1) {
			throw RegistryError::notFound('Assistant');
		}
		if (!is_int($version) || $version < 1) {
			throw RegistryError::invalid('version must be the version number shown with the assistant.');
		}
		return $this->call('POST', self::ASSISTANTS . '/' . $id . '/approve', $uid, $requestId, ['version' => $version]);
	}

	public function policy(string $uid, string $requestId): array {
		return $this->call('GET', self::POLICY, $uid, $requestId);
	}

	/** @param array<string, mixed> $in */
	public function setPolicy(string $uid, array $in, string $requestId): array {
		$policy = [
			'personalTools' => Validation::patterns($in['personalTools'] ?? [], $this->tools($uid, $requestId)),
			'fallbackToDefault' => ($in['fallbackToDefault'] ?? false) === true,
		];
		return $this->call('PUT', self::POLICY, $uid, $requestId, $policy);
	}

	/**
	 * Every server's listed tools (null when the orchestrator knows none yet), for checking and
	 * previewing patterns.
	 * @return array<string, list<string>|null>
	 */
	public function tools(string $uid, string $requestId): array {
		$tools = [];
		foreach ($this->servers($uid, $requestId)['servers'] as $server) {
			if (is_string($server['name'] ?? null) && !($server['conflict'] ?? false)) {
				$listed = $server['tools'] ?? null;
				$tools[$server['name']] = is_array($listed) && $listed !== [] ? array_values(array_filter($listed, 'is_string')) : null;
			}
		}
		return $tools;
	}

	/**
	 * Keeps mcp_audiences in step with the registered Nextcloud-facing servers, as
	 * `occ tamebi:setup` does for mcp-nextcloud: the server's URL is its tokens' audience.
	 * @param array{name: string, url: string, auth: string} $spec
	 */
	private function audience(array $spec): void {
		if ($spec['name'] === AppSettings::DEFAULT_AUDIENCE) {
			return;
		}
		$current = json_decode($this->settings->get(AppSettings::MCP_AUDIENCES), true);
		$audiences = is_array($current) ? $current : [];
		if ($spec['auth'] === 'nextcloud') {
			$audiences[$spec['name']] = $spec['url'];
		} else {
			unset($audiences[$spec['name']]);
		}
		$this->settings->set(AppSettings::MCP_AUDIENCES, $audiences === [] ? '' : (string)json_encode($audiences, JSON_UNESCAPED_SLASHES));
	}

	private static function checkName(string $name): void {
		if (preg_match(Validation::NAME, $name) !== 1) {
			throw RegistryError::notFound('Entry');
		}
	}

	/**
	 * One admin request; the orchestrator's refusals become our own errors (its words are logged).
	 * @param array<string, mixed>|null $body
	 * @return array<string, mixed>
	 */
	private function call(string $method, string $path, string $uid, string $requestId, ?array $body = null): array {
		$json = $body === null ? '' : (string)json_encode($body, JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE);
		try {
			$reply = $this->orchestrator->sendAdmin($path, $uid, $requestId, $method, $json);
		} catch (ProxyError $e) {
			throw RegistryError::unreachable($e);
		}
		return self::answer($reply, "$method $path");
	}

	/** @return array<string, mixed> */
	public static function answer(UpstreamReply $reply, string $what): array {
		$cause = new \RuntimeException("orchestrator $what answered {$reply->status}: " . substr($reply->body, 0, 500));
		return match (true) {
			$reply->status === 204 => [],
			$reply->isSuccess() => is_array($decoded = json_decode($reply->body, true)) ? $decoded : throw RegistryError::internal($cause),
			$reply->status === 400 => throw RegistryError::refused($cause),
			$reply->status === 403 => throw RegistryError::forbidden(),
			$reply->status === 404 => throw RegistryError::notFound('Entry'),
			$reply->status === 409 => throw RegistryError::conflict(),
			default => throw RegistryError::unreachable($cause),
		};
	}
}
