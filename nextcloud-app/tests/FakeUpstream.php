<?php

declare(strict_types=1);

namespace OCA\Tamebi\Tests;

/**
 * Runs tests/fixtures/fake-upstream.php under `php -S` on a free port with a fresh state folder,
 * waits (polling, with a timeout) until it answers, and stops it when dropped.
 */
final class FakeUpstream {
	public readonly string $url;
	public readonly string $state;
	/** @var resource */
	private $process;

	public function __construct(string $proxySecret, string $signingSecret) {
		$this->state = sys_get_temp_dir() . '/tamebi-fake-' . bin2hex(random_bytes(6));
		mkdir($this->state);
		$port = self::freePort();
		$this->url = "http://127.0.0.1:$port";
		$env = getenv() + [
			'TAMEBI_FAKE_STATE' => $this->state,
			'TAMEBI_FAKE_PROXY' => $proxySecret,
			'TAMEBI_FAKE_SIGNING' => $signingSecret,
			// The SSE route holds a worker while it waits; the others need their own.
			'PHP_CLI_SERVER_WORKERS' => '4',
		];
		$cmd = [PHP_BINARY, '-S', "127.0.0.1:$port", __DIR__ . '/fixtures/fake-upstream.php'];
		$process = proc_open($cmd, [0 => ['file', '/dev/null', 'r'], 1 => ['file', "{$this->state}/server.log", 'a'],
			2 => ['file', "{$this->state}/server.log", 'a']], $pipes, null, $env);
		if (!is_resource($process)) {
			throw new \RuntimeException('could not start php -S');
		}
		$this->process = $process;
		$this->waitUntilUp();
	}

	/** A TCP port free on 127.0.0.1 right now (also for the other processes tests start). */
	public static function freePort(): int {
		$socket = stream_socket_server('tcp://127.0.0.1:0');
		if ($socket === false) {
			throw new \RuntimeException('no free port');
		}
		$name = stream_socket_get_name($socket, false);
		fclose($socket);
		return (int)substr((string)$name, strrpos((string)$name, ':') + 1);
	}

	private function waitUntilUp(): void {
		if (!waitForHealthz($this->url, 10, fn (): bool => proc_get_status($this->process)['running'])) {
			throw new \RuntimeException('fake upstream did not start: ' . @file_get_contents("{$this->state}/server.log"));
		}
	}

	/** @return list<array{method: string, uri: string, body: string, headers: array<string, string>, at: float}> */
	public function requests(): array {
		$file = "{$this->state}/requests.jsonl";
		if (!is_file($file)) {
			return [];
		}
		return array_map(fn ($l) => json_decode($l, true), array_values(array_filter(explode("\n", file_get_contents($file)))));
	}

	/**
	 * Answers every orchestrator request with 503 + X-Tamebi-Owned-Elsewhere and this
	 * Retry-After for the next `$seconds`.
	 */
	public function ownedElsewhereFor(float $seconds, string $retryAfter): void {
		file_put_contents("{$this->state}/owned-retry-after", $retryAfter);
		file_put_contents("{$this->state}/owned-until", (string)(microtime(true) + $seconds));
	}

	public function release(): void {
		touch("{$this->state}/release");
	}

	public function stop(): void {
		if (is_resource($this->process)) {
			$status = proc_get_status($this->process);
			// php -S with workers forks children; end them, then the parent we started (by pid).
			$pid = (int)$status['pid'];
			$children = @file_get_contents("/proc/$pid/task/$pid/children");
			foreach (array_filter(explode(' ', trim((string)$children))) as $child) {
				posix_kill_safe((int)$child);
			}
			posix_kill_safe($pid);
			proc_close($this->process);
		}
	}

	public function __destruct() {
		$this->stop();
	}
}

/**
 * Polls `$url/healthz` until it answers 200 (true), `$seconds` pass or `$running` says the
 * process is gone (false). For the processes tests start (php -S, the orchestrator binary).
 * @param callable(): bool $running
 */
function waitForHealthz(string $url, int $seconds, callable $running): bool {
	$deadline = microtime(true) + $seconds;
	while (microtime(true) < $deadline) {
		$ch = curl_init($url . '/healthz');
		curl_setopt_array($ch, [CURLOPT_RETURNTRANSFER => true, CURLOPT_TIMEOUT => 1]);
		if (curl_exec($ch) !== false && curl_getinfo($ch, CURLINFO_RESPONSE_CODE) === 200) {
			return true;
		}
		if (!$running()) {
			return false;
		}
		usleep(20000);
	}
	return false;
}

function posix_kill_safe(int $pid): void {
	if (function_exists('posix_kill')) {
		posix_kill($pid, 15);
	} else {
		exec('kill ' . $pid);
	}
}
