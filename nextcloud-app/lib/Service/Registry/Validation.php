<?php

declare(strict_types=1);

namespace OCA\Tamebi\Service\Registry;

use OCA\Tamebi\Service\AppSettings;

/**
 * The admin page's entries checked before anything is sent (issue #30), with messages of our own
 * that say what to change. The orchestrator checks everything again (its rules are the contract:
 * TAMEBI_MCP_SERVERS and the TOML file's); this is so an admin learns what is wrong in words.
 * It must never decide anything the orchestrator would not: it only refuses earlier.
 */
final class Validation {
	public const NAME = '/^[A-Za-z0-9_-]{1,64}$/';
	private const PATTERN = '#^([A-Za-z0-9_*-]+)/([A-Za-z0-9_.*-]+)$#';
	/** The orchestrator's own tools' server name (memory). */
	public const LOCAL_SERVER = 'tamebi';

	/**
	 * A server: name, url, auth none|nextcloud, trust (reads, for auth=none only), no duplicate.
	 * @param array<string, mixed> $in
	 * @param list<string> $taken names already registered (the environment's included)
	 * @return array{name: string, url: string, auth: string, trust?: string}
	 */
	public static function server(array $in, array $taken): array {
		$name = self::string($in, 'name');
		if (preg_match(self::NAME, $name) !== 1 || $name === self::LOCAL_SERVER) {
			throw RegistryError::invalid('The server name must be 1-64 letters, digits, - or _ (and not "tamebi", which is the orchestrator\'s own).');
		}
		if (in_array($name, $taken, true)) {
			throw RegistryError::invalid("A server named \"$name\" already exists.");
		}
		$url = self::string($in, 'url');
		if (!AppSettings::validUrl($url) || str_contains($url, ';') || str_contains($url, ',')) {
			throw RegistryError::invalid('The server URL must be an absolute http(s) URL without credentials, query or fragment (for example https://mcp.example.com/mcp).');
		}
		$auth = self::string($in, 'auth');
		if (!in_array($auth, ['none', 'nextcloud'], true)) {
			throw RegistryError::invalid('auth must be "none" (no credential ever) or "nextcloud" (the person\'s own Nextcloud token).');
		}
		$out = ['name' => $name, 'url' => $url, 'auth' => $auth];
		$trust = $in['trust'] ?? null;
		if ($trust !== null && $trust !== '') {
			if ($trust !== 'reads' || $auth !== 'none') {
				throw RegistryError::invalid('The only trust option is "reads", and only for an auth=none server (its read-only tools then run without asking).');
			}
			$out['trust'] = 'reads';
		}
		return $out;
	}

	/**
	 * An assistant with the TOML file's fields.
	 * @param array<string, mixed> $in
	 * @param list<string> $taken
	 * @param array<string, list<string>|null> $tools server name => the tools it lists (null: not known)
	 * @return array{name: string, description: string, instructions: string, model?: string, tools: list<string>}
	 */
	public static function assistant(array $in, array $taken, array $tools): array {
		$name = self::string($in, 'name');
		if (preg_match(self::NAME, $name) !== 1 || preg_match('/^u-[0-9a-f]{32}$/', $name) === 1) {
			throw RegistryError::invalid('The assistant name must be 1-64 letters, digits, - or _.');
		}
		if (in_array($name, $taken, true)) {
			throw RegistryError::invalid("An assistant named \"$name\" already exists.");
		}
		$description = trim(self::string($in, 'description'));
		if ($description === '' || mb_strlen($description) > 300 || str_contains($description, "\n")) {
			throw RegistryError::invalid('The description must be one line of 1-300 characters.');
		}
		$instructions = is_string($in['instructions'] ?? null) ? $in['instructions'] : '';
		if (mb_strlen($instructions) > 8000) {
			throw RegistryError::invalid('The instructions must be at most 8000 characters.');
		}
		$out = ['name' => $name, 'description' => $description, 'instructions' => $instructions];
		$model = $in['model'] ?? null;
		if (is_string($model) && $model !== '') {
			$out['model'] = $model;
		}
		$out['tools'] = self::patterns($in['tools'] ?? null, $tools);
		return $out;
	}

	/**
	 * A list of `server/tool` patterns, each well formed, naming a known server (or `*`), and
	 * matching at least one tool where the server's tools are known.
	 * @param array<string, list<string>|null> $tools
	 * @return list<string>
	 */
	public static function patterns(mixed $raw, array $tools): array {
		if (!is_array($raw) || !array_is_list($raw) || count($raw) > 100) {
			throw RegistryError::invalid('tools must be a list of at most 100 server/tool patterns, such as "nextcloud/calendar_*".');
		}
		$out = [];
		foreach ($raw as $pattern) {
			if (!is_string($pattern) || preg_match(self::PATTERN, $pattern, $m) !== 1) {
				throw RegistryError::invalid('Unknown tool pattern "' . (is_string($pattern) ? $pattern : '?') . '": write server/tool, with * for any run of characters (for example nextcloud/calendar_*).');
			}
			[, $server, $tool] = $m;
			if (!str_contains($server, '*') && !array_key_exists($server, $tools) && $server !== self::LOCAL_SERVER) {
				throw RegistryError::invalid("Unknown tool pattern \"$pattern\": no server is named \"$server\".");
			}
			if (self::matches($pattern, $tools) === []) {
				throw RegistryError::invalid("Unknown tool pattern \"$pattern\": it matches none of the tools the servers list.");
			}
			$out[] = $pattern;
		}
		return array_values(array_unique($out));
	}

	/**
	 * The `server/tool` names a pattern matches among the listed tools: the admin page's preview.
	 * A server whose tools are not known (null) counts as matching, so a pattern for it is not
	 * refused for want of a listing.
	 * @param array<string, list<string>|null> $tools
	 * @return list<string>
	 */
	public static function matches(string $pattern, array $tools): array {
		[$server, $tool] = explode('/', $pattern, 2);
		$found = [];
		foreach ($tools + [self::LOCAL_SERVER => null] as $name => $listed) {
			if (!self::glob($server, (string)$name)) {
				continue;
			}
			if ($listed === null) {
				$found[] = $name . '/' . $tool;
				continue;
			}
			foreach ($listed as $t) {
				if (self::glob($tool, $t)) {
					$found[] = $name . '/' . $t;
				}
			}
		}
		return $found;
	}

	/** `*` is any run of characters, everything else itself (the orchestrator's rule). */
	public static function glob(string $pattern, string $text): bool {
		$regex = '/^' . implode('.*', array_map(fn (string $p): string => preg_quote($p, '/'), explode('*', $pattern))) . '$/s';
		return preg_match($regex, $text) === 1;
	}

	/** @param array<string, mixed> $in */
	private static function string(array $in, string $field): string {
		$value = $in[$field] ?? null;
		if (!is_string($value) || $value === '') {
			throw RegistryError::invalid("$field is required.");
		}
		return $value;
	}
}
