<?php

declare(strict_types=1);

namespace OCA\Tamebi\Service;

/**
 * Which orchestrator instance gets a request, when several are configured (issue 15).
 *
 * A conversation goes to the instance that ranks first for its id under rendezvous
 * (highest-random-weight) hashing: every app server computes the same order with no shared
 * state, and removing or adding one instance only moves the conversations that ranked it
 * first. The next instances in the order are the failover path. Requests that name no
 * conversation are spread by uid. It never reads or decides anything about permissions.
 */
final class Router {
	/**
	 * The configured instance URLs: the orchestrator URL setting may list several, separated by
	 * commas or whitespace. Trailing slashes are dropped, duplicates and empty entries ignored.
	 * @return list<string>
	 */
	public static function urls(string $setting): array {
		$urls = [];
		foreach (preg_split('/[\s,]+/', $setting) ?: [] as $url) {
			$url = rtrim($url, '/');
			if ($url !== '' && !in_array($url, $urls, true)) {
				$urls[] = $url;
			}
		}
		return $urls;
	}

	/**
	 * The instances in the order to try for `$key`: highest weight first. The weight of an
	 * instance is the first 64 bits of sha256(url, key); ties cannot depend on input order.
	 * @param list<string> $urls
	 * @return list<string>
	 */
	public static function order(array $urls, string $key): array {
		$weighted = [];
		foreach ($urls as $url) {
			$weighted[] = [substr(hash('sha256', $url . "\n" . $key), 0, 16), $url];
		}
		usort($weighted, static fn (array $a, array $b): int => [$b[0], $b[1]] <=> [$a[0], $a[1]]);
		return array_map(static fn (array $w): string => $w[1], $weighted);
	}

	/**
	 * The conversation a request is about, or '' when it names none: the id of a chat turn's
	 * body, or the {id} of /v1/chat/{id}/stream, /v1/chat/{id}/stop and /v1/conversations/{id}.
	 */
	public static function conversationOf(string $path, string $body): string {
		if (preg_match('#^/v1/(?:chat|conversations)/([A-Za-z0-9_-]{1,64})(?:/stream|/stop)?(?:\?|$)#', $path, $m) === 1) {
			return $m[1];
		}
		// A chat turn's path may carry a query (the person's language, `?lang=`).
		if (explode('?', $path, 2)[0] === '/v1/chat' && $body !== '') {
			$decoded = json_decode($body, true);
			if (is_array($decoded) && is_string($decoded['id'] ?? null)) {
				return $decoded['id'];
			}
		}
		return '';
	}

	/**
	 * The routing key: the conversation id when there is one, else the uid.
	 */
	public static function keyFor(string $path, string $body, string $uid): string {
		$conversation = self::conversationOf($path, $body);
		return $conversation !== '' ? 'c:' . $uid . ':' . $conversation : 'u:' . $uid;
	}
}
