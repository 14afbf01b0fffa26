<?php

declare(strict_types=1);

namespace OCA\Tamebi\Tests;

/**
 * The real `tamebi` orchestrator binary on a free port with a fresh data folder, for tests that
 * must see the orchestrator's own answers (its refusals above all), not an imitation of them.
 * It is built with the Rust test harness's own arguments (a no-op when `scripts/test` has run
 * the Rust suite first); CARGO_TARGET_DIR is honoured. It reaches no model and no MCP server:
 * the routes these tests use need neither.
 */
final class RealOrchestrator {
	/** The Rust harness's build (dev/test-harness BUILD_ARGS), so nothing is rebuilt differently. */
	private const BUILD = ['build', '--workspace', '--bins', '--features', 'tamebi/fault-injection', '-q'];

	public readonly string $url;
	private string $dataDir;
	/** @var resource */
	private $process;

	public function __construct(string $proxySecret, string $signingSecret) {
		$this->dataDir = sys_get_temp_dir() . '/tamebi-php-orchestrator-' . bin2hex(random_bytes(6));
		mkdir($this->dataDir);
		$port = FakeUpstream::freePort();
		$this->url = "http://127.0.0.1:$port";
		$env = [
			'PATH' => (string)getenv('PATH'),
			'TAMEBI_BIND' => "127.0.0.1:$port",
			'TAMEBI_PROXY_SECRET' => $proxySecret,
			'TAMEBI_SIGNING_SECRET' => $signingSecret,
			'TAMEBI_MODEL_URL' => 'http://127.0.0.1:9/v1',
			'TAMEBI_MODEL' => 'unreachable',
			'TAMEBI_MCP_SERVERS' => 'nextcloud=http://127.0.0.1:9/mcp',
			'TAMEBI_DATA_DIR' => $this->dataDir,
		];
		$log = "{$this->dataDir}/orchestrator.log";
		$process = proc_open([self::binary()], [0 => ['file', '/dev/null', 'r'], 1 => ['file', $log, 'a'], 2 => ['file', $log, 'a']], $pipes, null, $env);
		if (!is_resource($process)) {
			throw new \RuntimeException('could not start the orchestrator');
		}
		$this->process = $process;
		$this->waitUntilUp($log);
	}

	private static function binary(): string {
		$root = dirname(__DIR__, 2);
		$cargo = getenv('CARGO') ?: 'cargo';
		$cmd = implode(' ', array_map('escapeshellarg', [$cargo, ...self::BUILD])) . ' 2>&1';
		exec('cd ' . escapeshellarg($root) . " && $cmd", $out, $code);
		if ($code !== 0) {
			throw new \RuntimeException("cargo build failed ($code): " . implode("\n", array_slice($out, -20)));
		}
		$target = getenv('CARGO_TARGET_DIR') ?: "$root/target";
		return "$target/debug/tamebi";
	}

	private function waitUntilUp(string $log): void {
		if (!waitForHealthz($this->url, 30, fn (): bool => proc_get_status($this->process)['running'])) {
			$this->stop();
			throw new \RuntimeException('the orchestrator did not start: ' . @file_get_contents($log));
		}
	}

	public function stop(): void {
		if (is_resource($this->process)) {
			proc_terminate($this->process);
			proc_close($this->process);
		}
		exec('rm -rf ' . escapeshellarg($this->dataDir));
	}

	public function __destruct() {
		$this->stop();
	}
}
