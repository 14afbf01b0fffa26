<?php

declare(strict_types=1);

namespace OCA\Tamebi\Service;

use OCA\Tamebi\Exception\ProxyError;
use OCP\AppFramework\Utility\ITimeFactory;
use OCP\Http\Client\IClientService;

/**
 * The only way this app talks to the orchestrator. Every request gets the same headers, built in
 * one place, whether it is buffered or streamed (G1: proxy bearer + signed uid, nonce and
 * credentials; the user's tokens, one per MCP server audience; Nextcloud's request id).
 * It must never take a uid from anywhere but its caller, and callers take it from IUserSession.
 *
 * With several orchestrator instances it routes by conversation ([[Router]]: rendezvous
 * hashing) and fails over to the next instance when one cannot be reached, or answers that
 * another instance owns the conversation (503 + X-Tamebi-Owned-Elsewhere). When every instance
 * has been tried and one still says "owned elsewhere" (an instance died and its lease has not
 * run out yet), it waits the Retry-After that answer gave, once and only when it is short
 * (at most MAX_WAIT_S), and tries the order again; otherwise that 503 goes to the browser with
 * its Retry-After. Each attempt is signed afresh (new nonce) for the URL it goes to: the
 * signature covers the method, path and query as sent (issue #27), and so the base path of that
 * instance's URL.
 */
class Orchestrator {
	private const TIMEOUT_S = 60;
	/** Set by an orchestrator on a 503 that means "another instance owns this conversation". */
	public const OWNED_ELSEWHERE = 'x-tamebi-owned-elsewhere';
	/**
	 * The longest Retry-After waited out here, once per request: a PHP worker is held while it
	 * waits, so a longer one goes to the browser instead.
	 */
	public const MAX_WAIT_S = 2;

	public function __construct(
		private AppSettings $settings,
		private IClientService $clientService,
		private ITimeFactory $time,
	) {
	}

	/**
	 * The complete header set for one request of `$method` to `$url` (the full URL it is sent
	 * to: the signature covers its path and query). `$tokens` maps MCP server name => the user's
	 * access token for that server's audience; each token goes out under its own server's name only.
	 * @param array<string, string> $tokens
	 * @return array<string, string>
	 */
	public function headers(string $method, string $url, string $uid, string $body, array $tokens, string $requestId, string $contentType = ''): array {
		$headers = $this->settings->signer()->headers($method, $url, $uid, $this->time->getTime(), $body, Signer::credentialsHeader($tokens));
		if ($requestId !== '') {
			$headers['X-Request-Id'] = $requestId;
		}
		if ($contentType !== '') {
			$headers['Content-Type'] = $contentType;
		}
		return $headers;
	}

	/**
	 * @param array<string, string> $tokens the user's access tokens by MCP server name
	 * @throws ProxyError when the orchestrator cannot be reached or the app is not set up
	 */
	public function send(string $method, string $path, string $uid, string $body, array $tokens, string $requestId): UpstreamReply {
		return $this->failover($path, $body, $uid, fn (string $base): UpstreamReply => $this->exchange(
			$base, $method, $path, $this->headers($method, $base . $path, $uid, $body, $tokens, $requestId, $body === '' ? '' : 'application/json'), $body));
	}

	/**
	 * A request to an admin route (`/v1/admin/...`, a GET unless `$method` says otherwise): the G1
	 * headers for `$uid` without any token, plus the admin signature over the same request. Callers must have asked IGroupManager::isAdmin($uid) first; the
	 * orchestrator cannot ask Nextcloud, so this signature is the app's word for it.
	 * @throws ProxyError when the orchestrator cannot be reached or the app is not set up
	 */
	public function sendAdmin(string $path, string $uid, string $requestId, string $method = 'GET', string $body = ''): UpstreamReply {
		return $this->failover($path, $body, $uid, function (string $base) use ($path, $uid, $requestId, $method, $body): UpstreamReply {
			$headers = $this->settings->signer()->adminRequestHeaders($method, $base . $path, $uid, $this->time->getTime(), $body);
			if ($requestId !== '') {
				$headers['X-Request-Id'] = $requestId;
			}
			if ($body !== '') {
				$headers['Content-Type'] = 'application/json';
			}
			return $this->exchange($base, $method, $path, $headers, $body);
		});
	}

	/**
	 * Tries the instances in this request's order: the next one when one cannot be reached, or
	 * says another instance owns the conversation. Each attempt signs afresh.
	 * @param callable(string): UpstreamReply $attempt sends the request to one base URL
	 */
	private function failover(string $path, string $body, string $uid, callable $attempt): UpstreamReply {
		$reply = $this->route($this->instances($path, $body, $uid), $attempt);
		assert($reply instanceof UpstreamReply);
		return $reply;
	}

	/**
	 * One pass over `$instances` in order, and at most one more after a short wait (see the class
	 * comment). Returns the first answer that is not "owned elsewhere"; else the last such answer;
	 * throws when no instance could be reached at all.
	 * @param list<string> $instances
	 * @param callable(string): (UpstreamReply|UpstreamStream) $attempt sends the request to one base URL
	 * @throws ProxyError
	 */
	private function route(array $instances, callable $attempt): UpstreamReply|UpstreamStream {
		if ($instances === []) {
			throw ProxyError::notConfigured('no orchestrator URL; run occ tamebi:setup');
		}
		for ($pass = 0; ; $pass++) {
			$held = null;
			$unreachable = null;
			foreach ($instances as $base) {
				try {
					$reply = $attempt($base);
				} catch (ProxyError $e) {
					if ($e->status() !== 502) {
						self::close($held);
						throw $e;
					}
					$unreachable = $e;
					continue;
				}
				self::close($held);
				if (!self::ownedElsewhere($reply)) {
					return $reply;
				}
				$held = $reply;
			}
			if ($held === null) {
				throw $unreachable ?? ProxyError::unreachable('no orchestrator answered');
			}
			$wait = self::retryAfter($held);
			if ($pass > 0 || $wait === null || $wait > self::MAX_WAIT_S) {
				return $held;
			}
			self::close($held);
			usleep($wait * 1_000_000);
		}
	}

	private static function ownedElsewhere(UpstreamReply|UpstreamStream $reply): bool {
		$status = $reply instanceof UpstreamReply ? $reply->status : $reply->status();
		return $status === 503 && $reply->header(self::OWNED_ELSEWHERE) !== null;
	}

	/** The Retry-After of an answer in whole seconds (delta-seconds only), or null. */
	public static function retryAfter(UpstreamReply|UpstreamStream $reply): ?int {
		$value = trim($reply->header('retry-after') ?? '');
		return preg_match('/^[0-9]{1,6}$/', $value) === 1 ? (int)$value : null;
	}

	private static function close(UpstreamReply|UpstreamStream|null $reply): void {
		if ($reply instanceof UpstreamStream) {
			$reply->close();
		}
	}

	/**
	 * The instances to try for this request, in order.
	 * @return list<string>
	 */
	private function instances(string $path, string $body, string $uid): array {
		return Router::order($this->settings->orchestratorUrls(), Router::keyFor($path, $body, $uid));
	}

	/** @param array<string, string> $headers */
	private function exchange(string $base, string $method, string $path, array $headers, string $body): UpstreamReply {
		$url = $base . $path;
		$options = [
			'headers' => $headers,
			'http_errors' => false,
			'timeout' => self::TIMEOUT_S,
			'allow_redirects' => false,
			// The orchestrator normally lives on a private address next to Nextcloud.
			'nextcloud' => ['allow_local_address' => true],
		];
		if ($body !== '') {
			$options['body'] = $body;
		}
		$client = $this->clientService->newClient();
		try {
			$response = match ($method) {
				'GET' => $client->get($url, $options),
				'POST' => $client->post($url, $options),
				'PUT' => $client->put($url, $options),
				'DELETE' => $client->delete($url, $options),
				default => throw ProxyError::badRequest("unsupported method $method"),
			};
		} catch (ProxyError $e) {
			throw $e;
		} catch (\Exception $e) {
			throw ProxyError::unreachable("orchestrator $method $path: " . $e->getMessage(), $e);
		}
		$headers = [];
		foreach (['content-type', 'content-security-policy', 'retry-after', self::OWNED_ELSEWHERE] as $name) {
			$value = $response->getHeader($name);
			if ($value !== '') {
				$headers[$name] = $value;
			}
		}
		$responseBody = $response->getBody();
		return new UpstreamReply(
			$response->getStatusCode(),
			$headers,
			is_string($responseBody) ? $responseBody : (string)stream_get_contents($responseBody),
		);
	}

	/**
	 * @param array<string, string> $tokens the user's access tokens by MCP server name
	 * @throws ProxyError when the orchestrator cannot be reached or the app is not set up
	 */
	public function stream(string $method, string $path, string $uid, string $body, array $tokens, string $requestId): UpstreamStream {
		$stream = $this->route($this->instances($path, $body, $uid), function (string $base) use ($method, $path, $uid, $body, $tokens, $requestId): UpstreamStream {
			$headers = $this->headers($method, $base . $path, $uid, $body, $tokens, $requestId, $body === '' ? '' : 'application/json');
			$headers['Accept'] = 'text/event-stream';
			return UpstreamStream::open($method, $base . $path, $headers, $body);
		});
		assert($stream instanceof UpstreamStream);
		return $stream;
	}
}
