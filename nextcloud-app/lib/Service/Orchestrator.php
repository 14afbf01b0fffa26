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
 */
class Orchestrator {
	private const TIMEOUT_S = 60;

	public function __construct(
		private AppSettings $settings,
		private IClientService $clientService,
		private ITimeFactory $time,
	) {
	}

	/**
	 * The complete header set for one request. `$tokens` maps MCP server name => the user's access
	 * token for that server's audience; each token goes out under its own server's name only.
	 * @param array<string, string> $tokens
	 * @return array<string, string>
	 */
	public function headers(string $uid, string $body, array $tokens, string $requestId, string $contentType = ''): array {
		$headers = $this->settings->signer()->headers($uid, $this->time->getTime(), $body, Signer::credentialsHeader($tokens));
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
		return $this->exchange($method, $path, $this->headers($uid, $body, $tokens, $requestId, $body === '' ? '' : 'application/json'), $body);
	}

	/**
	 * A GET of an admin route (`/v1/admin/...`): the G1 headers for `$uid` without any token, plus
	 * the admin signature. Callers must have asked IGroupManager::isAdmin($uid) first; the
	 * orchestrator cannot ask Nextcloud, so this signature is the app's word for it.
	 * @throws ProxyError when the orchestrator cannot be reached or the app is not set up
	 */
	public function sendAdmin(string $path, string $uid, string $requestId): UpstreamReply {
		$headers = $this->settings->signer()->adminHeaders($uid, $this->time->getTime());
		if ($requestId !== '') {
			$headers['X-Request-Id'] = $requestId;
		}
		return $this->exchange('GET', $path, $headers, '');
	}

	/** @param array<string, string> $headers */
	private function exchange(string $method, string $path, array $headers, string $body): UpstreamReply {
		$url = $this->settings->orchestratorUrl() . $path;
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
				'DELETE' => $client->delete($url, $options),
				default => throw ProxyError::badRequest("unsupported method $method"),
			};
		} catch (ProxyError $e) {
			throw $e;
		} catch (\Exception $e) {
			throw ProxyError::unreachable("orchestrator $method $path: " . $e->getMessage(), $e);
		}
		$headers = [];
		foreach (['content-type', 'content-security-policy'] as $name) {
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
		$headers = $this->headers($uid, $body, $tokens, $requestId, $body === '' ? '' : 'application/json');
		$headers['Accept'] = 'text/event-stream';
		return UpstreamStream::open($method, $this->settings->orchestratorUrl() . $path, $headers, $body);
	}
}
