<?php

declare(strict_types=1);

namespace OCA\Tamebi\Tests;

/**
 * The real Nextcloud stand-in (dev/nextcloud-standin/run) on a free port with a fresh state
 * folder and users alice and bob, started and stopped by the test. With $jwtBearer it accepts
 * its own JWTs as Bearer, like a Nextcloud with user_oidc's oidc_provider_bearer_validation;
 * without, it refuses them, like a fresh one. Needs scripts/install.d/20-standin.sh.
 */
final class Standin {
	public readonly string $url;
	/** @var array<string, string> uid => app password */
	public readonly array $passwords;
	private string $state;
	/** @var resource */
	private $process;

	public function __construct(bool $jwtBearer) {
		$run = dirname(__DIR__, 2) . '/dev/nextcloud-standin/run';
		$this->state = sys_get_temp_dir() . '/tamebi-php-standin-' . bin2hex(random_bytes(6));
		mkdir($this->state);
		$this->passwords = ['alice' => 'alice-' . bin2hex(random_bytes(8)), 'bob' => 'bob-' . bin2hex(random_bytes(8))];
		$cmd = [$run, '--state', "{$this->state}/state", '--bind', '127.0.0.1:0'];
		foreach ($this->passwords as $uid => $pw) {
			array_push($cmd, '--user', "$uid:$pw");
		}
		if ($jwtBearer) {
			$cmd[] = '--oidc-provider-bearer-validation';
		}
		$process = proc_open($cmd, [0 => ['file', '/dev/null', 'r'], 1 => ['pipe', 'w'], 2 => ['file', "{$this->state}/stderr", 'a']], $pipes);
		if (!is_resource($process)) {
			throw new \RuntimeException('could not start the stand-in');
		}
		$this->process = $process;
		// Its first stdout line is "ready http://127.0.0.1:PORT" once it serves (port 0 picks one).
		stream_set_blocking($pipes[1], true);
		$read = [$pipes[1]];
		$none = null;
		$line = stream_select($read, $none, $none, 30) === 1 ? trim((string)fgets($pipes[1])) : '';
		if (!str_starts_with($line, 'ready http://')) {
			$this->stop();
			throw new \RuntimeException("stand-in did not start (got '$line'): " . @file_get_contents("{$this->state}/stderr"));
		}
		$this->url = substr($line, strlen('ready '));
	}

	/** The stand-in's state folder (its occ reads the server's address and token there). */
	public function stateDir(): string {
		return "{$this->state}/state";
	}

	/** Runs the stand-in's occ; returns [exit status, output]. @return array{int, string} */
	public function occ(string ...$args): array {
		$cmd = array_merge([dirname(__DIR__, 2) . '/dev/nextcloud-standin/occ', '--state', $this->stateDir()], $args);
		exec(implode(' ', array_map('escapeshellarg', $cmd)) . ' 2>&1', $out, $code);
		return [$code, implode("\n", $out)];
	}

	/** A JWT access token from the stand-in's token endpoint, as the oidc app would issue it. */
	public function mintJwt(string $uid, string $aud): string {
		$ch = curl_init($this->url . '/standin/token');
		curl_setopt_array($ch, [CURLOPT_POST => true, CURLOPT_POSTFIELDS => http_build_query(['aud' => $aud]),
			CURLOPT_USERPWD => $uid . ':' . $this->passwords[$uid], CURLOPT_RETURNTRANSFER => true, CURLOPT_TIMEOUT => 10]);
		$body = json_decode((string)curl_exec($ch), true);
		if (!is_array($body) || !is_string($body['access_token'] ?? null)) {
			throw new \RuntimeException('minting failed');
		}
		return $body['access_token'];
	}

	public function stop(): void {
		if (is_resource($this->process)) {
			proc_terminate($this->process, 15);
			proc_close($this->process);
		}
	}

	public function __destruct() {
		$this->stop();
	}
}
