<?php

declare(strict_types=1);

namespace OCA\Tamebi\Command;

use OCA\Tamebi\Service\AppSettings;
use OCA\Tamebi\Service\Router;

/**
 * The URL options of `occ tamebi:setup`, checked before anything is changed.
 *
 * `--orchestrator-url` lists one orchestrator or several (comma or whitespace separated, split by
 * the same rule the app reads the setting with: Router::urls). Each must be an absolute http(s)
 * URL without credentials, query or fragment; trailing slashes are dropped, and scheme and host
 * are lower-cased so one instance spelled two ways is listed (and routed to) once.
 * `--mcp-url` is one URL, the audience of the users' tokens: it must equal the MCP server's own
 * URL, so apart from surrounding whitespace it is kept exactly (a trailing slash included).
 * Every refusal names the option and the value.
 */
final class SetupOptions {
	private const HOW = 'must be an absolute http(s) URL without credentials, query or fragment';

	/**
	 * @return array{orchestrators: list<string>, mcp: string}
	 * @throws \InvalidArgumentException naming the option and the value refused
	 */
	public static function parse(string $orchestrator, string $mcp): array {
		$orchestrators = [];
		foreach (Router::urls($orchestrator) ?: [''] as $url) {
			self::check('--orchestrator-url', $url, ' (several orchestrator URLs: comma separated)');
			$orchestrators[] = self::normalized($url);
		}
		$mcp = trim($mcp);
		// One audience: a comma is legal in a URL path, so a list would pass as one odd URL.
		if (preg_match('/[\s,]/', $mcp) === 1) {
			throw new \InvalidArgumentException("--mcp-url is one URL (the audience of the users' tokens), got '$mcp'.");
		}
		self::check('--mcp-url', $mcp, '');
		return ['orchestrators' => array_values(array_unique($orchestrators)), 'mcp' => $mcp];
	}

	/**
	 * The setting's value for the checked orchestrator URLs.
	 * @param list<string> $orchestrators
	 */
	public static function stored(array $orchestrators): string {
		return implode(', ', $orchestrators);
	}

	private static function check(string $option, string $url, string $hint): void {
		if (!AppSettings::validUrl($url)) {
			throw new \InvalidArgumentException("$option " . self::HOW . "$hint, got '$url'.");
		}
	}

	/** Scheme and host lower-cased (they are case-insensitive); port and path as given. */
	private static function normalized(string $url): string {
		$p = parse_url($url);
		if (!is_array($p)) {
			return $url;
		}
		$port = isset($p['port']) ? ':' . $p['port'] : '';
		return strtolower($p['scheme'] ?? '') . '://' . strtolower($p['host'] ?? '') . $port . ($p['path'] ?? '');
	}
}
