<?php

declare(strict_types=1);

namespace OCA\Tamebi\Service;

use Symfony\Component\Console\Application;
use Symfony\Component\Console\Input\ArrayInput;
use Symfony\Component\Console\Output\BufferedOutput;

/**
 * The OIDC client of this instance's `oidc` app, managed through that app's own occ commands
 * (`oidc:create`, `oidc:list`), whose options are its documented surface, rather than its
 * database tables.
 * It must never print or log a client secret; the caller stores it as sensitive app config.
 */
class OidcClients {
	public const CLIENT_NAME = 'Tamebi';

	public function __construct(
		private Application $console,
	) {
	}

	public function available(): bool {
		return $this->console->has('oidc:create') && $this->console->has('oidc:list');
	}

	/** @return list<array<string, mixed>> the clients as `oidc:list` reports them */
	public function all(): array {
		[$code, $out] = $this->run(['command' => 'oidc:list']);
		$rows = json_decode($out, true);
		return $code === 0 && is_array($rows) ? array_values(array_filter($rows, 'is_array')) : [];
	}

	/** The client with this id, if it exists. */
	public function find(string $clientId): ?array {
		foreach ($this->all() as $row) {
			if (($row['client_identifier'] ?? $row['client_id'] ?? null) === $clientId) {
				return $row;
			}
		}
		return null;
	}

	/** True when the client issues JWT access tokens bound to the MCP server (aud = resource URL). */
	public static function matches(array $row, string $mcpUrl): bool {
		return ($row['token_type'] ?? '') === 'jwt' && ($row['resource_url'] ?? '') === $mcpUrl;
	}

	/**
	 * @return array{id: string, secret: string}
	 * @throws \RuntimeException with the oidc app's own message when it refuses
	 */
	public function create(string $redirectUri, string $mcpUrl): array {
		[$code, $out] = $this->run([
			'command' => 'oidc:create',
			'name' => self::CLIENT_NAME,
			'redirect_uris' => [$redirectUri],
			'--type' => 'confidential',
			'--flow' => 'code',
			'--token_type' => 'jwt',
			'--resource_url' => $mcpUrl,
		]);
		$client = json_decode($out, true);
		if ($code !== 0 || !is_array($client) || !is_string($client['client_id'] ?? null) || !is_string($client['client_secret'] ?? null)) {
			throw new \RuntimeException('oidc:create failed: ' . strip_tags(trim($out)));
		}
		return ['id' => $client['client_id'], 'secret' => $client['client_secret']];
	}

	/** @return array{int, string} */
	private function run(array $input): array {
		$this->console->setAutoExit(false);
		$output = new BufferedOutput();
		$arrayInput = new ArrayInput($input);
		$arrayInput->setInteractive(false);
		$code = $this->console->find((string)$input['command'])->run($arrayInput, $output);
		return [$code, $output->fetch()];
	}
}
