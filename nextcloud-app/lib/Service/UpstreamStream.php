<?php

declare(strict_types=1);

namespace OCA\Tamebi\Service;

use OCA\Tamebi\Exception\ProxyError;

/**
 * One streaming HTTP request to the orchestrator, read as it arrives.
 *
 * open() returns as soon as the response headers are in (so the controller can pass the status
 * on before the body starts), and chunks() then yields each piece of body the moment curl hands
 * it over. A curl write callback driven by curl_multi is used rather than IClientService because
 * the chat answer must never be buffered: IClient's `stream => true` goes through Guzzle's
 * fopen-based handler, whose buffering and timeouts we do not control.
 * It must never hold more than the bytes not yet handed to the caller.
 */
final class UpstreamStream {
	private const CONNECT_TIMEOUT_S = 5;
	private const SELECT_TIMEOUT_S = 1.0;

	/** @var \CurlMultiHandle */
	private $multi;
	/** @var \CurlHandle */
	private $easy;
	private string $pending = '';
	private int $status = 0;
	/** @var array<string, string> */
	private array $headers = [];
	private bool $headersDone = false;
	private bool $finished = false;
	private int $curlError = 0;
	private string $curlErrorText = '';

	/**
	 * @param array<string, string> $headers
	 * @throws ProxyError when the orchestrator cannot be reached
	 */
	public static function open(string $method, string $url, array $headers, string $body): self {
		$stream = new self();
		$stream->start($method, $url, $headers, $body);
		while (!$stream->headersDone && !$stream->finished) {
			$stream->pump();
		}
		if ($stream->status === 0) {
			$detail = $stream->curlErrorText !== '' ? $stream->curlErrorText : 'no response';
			$stream->close();
			throw ProxyError::unreachable("orchestrator stream $method $url: $detail");
		}
		return $stream;
	}

	private function __construct() {
	}

	/** @param array<string, string> $headers */
	private function start(string $method, string $url, array $headers, string $body): void {
		$lines = ['Expect:', 'Accept-Encoding: identity'];
		foreach ($headers as $name => $value) {
			$lines[] = $name . ': ' . $value;
		}
		$easy = curl_init();
		curl_setopt_array($easy, [
			CURLOPT_URL => $url,
			CURLOPT_CUSTOMREQUEST => $method,
			CURLOPT_HTTPHEADER => $lines,
			CURLOPT_CONNECTTIMEOUT => self::CONNECT_TIMEOUT_S,
			CURLOPT_FOLLOWLOCATION => false,
			CURLOPT_PROTOCOLS => CURLPROTO_HTTP | CURLPROTO_HTTPS,
			CURLOPT_HEADERFUNCTION => fn ($ch, string $line): int => $this->onHeader($line),
			CURLOPT_WRITEFUNCTION => fn ($ch, string $data): int => $this->onBody($data),
		]);
		if ($method !== 'GET' && $method !== 'DELETE') {
			curl_setopt($easy, CURLOPT_POSTFIELDS, $body);
		}
		$this->easy = $easy;
		$this->multi = curl_multi_init();
		curl_multi_add_handle($this->multi, $easy);
	}

	private function onHeader(string $line): int {
		$trimmed = rtrim($line, "\r\n");
		if (preg_match('#^HTTP/\S+\s+(\d{3})#', $trimmed, $m) === 1) {
			// A new status line (e.g. after an interim 1xx) starts a fresh header block.
			$this->status = (int)$m[1];
			$this->headers = [];
			$this->headersDone = false;
		} elseif ($trimmed === '') {
			$this->headersDone = $this->status >= 200;
		} elseif (str_contains($trimmed, ':')) {
			[$name, $value] = explode(':', $trimmed, 2);
			$this->headers[strtolower(trim($name))] = trim($value);
		}
		return strlen($line);
	}

	private function onBody(string $data): int {
		$this->pending .= $data;
		return strlen($data);
	}

	/** Moves the transfer forward, waiting at most a second for the socket. */
	private function pump(): void {
		if ($this->finished) {
			return;
		}
		$running = 0;
		curl_multi_exec($this->multi, $running);
		if ($running === 0) {
			$this->finish();
			return;
		}
		if ($this->pending === '' && curl_multi_select($this->multi, self::SELECT_TIMEOUT_S) === -1) {
			// select can fail spuriously on some systems; avoid a hot loop.
			usleep(1000);
		}
	}

	private function finish(): void {
		$this->finished = true;
		while (($info = curl_multi_info_read($this->multi)) !== false) {
			if (($info['result'] ?? CURLE_OK) !== CURLE_OK) {
				$this->curlError = (int)$info['result'];
				$this->curlErrorText = curl_error($this->easy);
			}
		}
	}

	public function status(): int {
		return $this->status;
	}

	public function header(string $name): ?string {
		return $this->headers[strtolower($name)] ?? null;
	}

	/**
	 * Yields the body as it arrives, piece by piece.
	 * @return \Generator<int, string>
	 */
	public function chunks(): \Generator {
		while (true) {
			if ($this->pending !== '') {
				$chunk = $this->pending;
				$this->pending = '';
				yield $chunk;
				continue;
			}
			if ($this->finished) {
				return;
			}
			$this->pump();
		}
	}

	/** Reads the rest of the body, up to $limit bytes (used for error bodies, which go to the log). */
	public function drain(int $limit): string {
		$out = '';
		foreach ($this->chunks() as $chunk) {
			$out .= $chunk;
			if (strlen($out) >= $limit) {
				return substr($out, 0, $limit);
			}
		}
		return $out;
	}

	/** True when the transfer ended because of a network error rather than a clean end. */
	public function failed(): bool {
		return $this->curlError !== 0;
	}

	public function errorText(): string {
		return $this->curlErrorText;
	}

	public function close(): void {
		if (isset($this->multi)) {
			curl_multi_remove_handle($this->multi, $this->easy);
			curl_multi_close($this->multi);
			curl_close($this->easy);
			unset($this->multi, $this->easy);
		}
	}

	public function __destruct() {
		$this->close();
	}
}
