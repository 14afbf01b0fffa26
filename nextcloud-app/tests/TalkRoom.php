<?php

declare(strict_types=1);

namespace OCA\Tamebi\Tests;

/**
 * A Talk conversation on the real stand-in with the Tamebi bot enabled, whose webhook is the
 * app's real TalkController served by `php -S tests/talk-webhook-server.php`, talking to the
 * orchestrator at `$orchestratorUrl`. The bot is installed with the stand-in's occ
 * (`talk:bot:install -f webhook -f response Tamebi <secret> <url>`) and enabled by alice, the
 * conversation's moderator, through Talk's OCS API; alice and bob are participants, and the
 * conversation is public so a guest can write in it.
 */
final class TalkRoom {
	public readonly string $secret;
	public readonly string $webhookUrl;
	public readonly string $token;
	public readonly int $botId;
	private string $dir;
	/** @var resource */
	private $process;

	public function __construct(public readonly Standin $nc, string $orchestratorUrl, string $proxySecret, string $signingSecret) {
		$this->dir = sys_get_temp_dir() . '/tamebi-talk-' . bin2hex(random_bytes(6));
		mkdir($this->dir);
		$this->secret = bin2hex(random_bytes(32));
		$port = FakeUpstream::freePort();
		$this->webhookUrl = "http://127.0.0.1:$port/ocs/v2.php/apps/tamebi/api/v1/talk/webhook";
		$env = getenv() + [
			'TAMEBI_TALK_SECRET' => $this->secret,
			'TAMEBI_TALK_NC_URL' => $nc->url,
			'TAMEBI_TALK_ORCHESTRATOR' => $orchestratorUrl,
			'TAMEBI_TALK_PROXY_SECRET' => $proxySecret,
			'TAMEBI_TALK_SIGNING_SECRET' => $signingSecret,
			'TAMEBI_TALK_CACHE' => "{$this->dir}/cache",
			'TAMEBI_TALK_LOG' => "{$this->dir}/app.log",
			'PHP_CLI_SERVER_WORKERS' => '4',
		];
		$process = proc_open([PHP_BINARY, '-S', "127.0.0.1:$port", __DIR__ . '/talk-webhook-server.php'],
			[0 => ['file', '/dev/null', 'r'], 1 => ['file', "{$this->dir}/server.log", 'a'], 2 => ['file', "{$this->dir}/server.log", 'a']],
			$pipes, null, $env);
		if (!is_resource($process)) {
			throw new \RuntimeException('could not start php -S');
		}
		$this->process = $process;
		$this->waitUntilUp($port);
		[$code, $out] = $nc->occ('talk:bot:install', '-f', 'webhook', '-f', 'response', 'Tamebi', $this->secret, $this->webhookUrl);
		if ($code !== 0) {
			throw new \RuntimeException("talk:bot:install failed: $out");
		}
		[, $list] = $nc->occ('talk:bot:list', '--output=json');
		$this->botId = (int)array_values(array_filter(json_decode($list, true), fn ($b) => $b['url'] === $this->webhookUrl))[0]['id'];
		[$status, $room] = $this->ocs('alice', 'POST', '/ocs/v2.php/apps/spreed/api/v4/room', ['roomType' => 3, 'roomName' => 'Planning']);
		if ($status !== 201) {
			throw new \RuntimeException("room not created: $status");
		}
		$this->token = $room['token'];
		$this->ocs('alice', 'POST', "/ocs/v2.php/apps/spreed/api/v4/room/{$this->token}/participants", ['newParticipant' => 'bob', 'source' => 'users']);
		[$status] = $this->ocs('alice', 'POST', "/ocs/v2.php/apps/spreed/api/v1/bot/{$this->token}/{$this->botId}");
		if ($status !== 201) {
			throw new \RuntimeException("bot not enabled: $status");
		}
	}

	private function waitUntilUp(int $port): void {
		$deadline = microtime(true) + 10;
		while (microtime(true) < $deadline) {
			$socket = @fsockopen('127.0.0.1', $port, $errno, $errstr, 0.2);
			if ($socket !== false) {
				fclose($socket);
				return;
			}
			usleep(20000);
		}
		throw new \RuntimeException('the webhook server did not start: ' . @file_get_contents("{$this->dir}/server.log"));
	}

	/**
	 * An OCS request as `$uid` (Basic with the app password) to the stand-in.
	 * @return array{int, mixed} status and ocs.data
	 */
	public function ocs(string $uid, string $method, string $path, array $form = []): array {
		$ch = curl_init($this->nc->url . $path);
		curl_setopt_array($ch, [CURLOPT_CUSTOMREQUEST => $method, CURLOPT_RETURNTRANSFER => true, CURLOPT_TIMEOUT => 20,
			CURLOPT_USERPWD => $uid . ':' . $this->nc->passwords[$uid],
			CURLOPT_HTTPHEADER => ['OCS-APIRequest: true', 'Accept: application/json']]);
		if ($form !== []) {
			curl_setopt($ch, CURLOPT_POSTFIELDS, http_build_query($form));
		}
		$body = json_decode((string)curl_exec($ch), true);
		return [curl_getinfo($ch, CURLINFO_RESPONSE_CODE), $body['ocs']['data'] ?? null];
	}

	/** `$uid` posts a message; returns its id. */
	public function post(string $uid, string $message): int {
		[$status, $data] = $this->ocs($uid, 'POST', "/ocs/v2.php/apps/spreed/api/v1/chat/{$this->token}", ['message' => $message]);
		if ($status !== 201) {
			throw new \RuntimeException("chat post failed: $status");
		}
		return (int)$data['id'];
	}

	/** A guest posts (the stand-in's control route, as a guest's browser would). */
	public function guestPost(string $message): int {
		$ch = curl_init($this->nc->url . '/standin/talk/post');
		curl_setopt_array($ch, [CURLOPT_POST => true, CURLOPT_RETURNTRANSFER => true, CURLOPT_TIMEOUT => 20,
			CURLOPT_HTTPHEADER => ['Content-Type: application/json'],
			CURLOPT_POSTFIELDS => json_encode(['token' => $this->token, 'actorType' => 'guests', 'actorId' => 'guest-session-1', 'name' => 'Visitor', 'message' => $message])]);
		$data = json_decode((string)curl_exec($ch), true);
		return (int)$data['id'];
	}

	/** The conversation as `$uid` reads it, oldest first. @return list<array<string, mixed>> */
	public function messages(string $uid = 'bob'): array {
		[, $data] = $this->ocs($uid, 'GET', "/ocs/v2.php/apps/spreed/api/v1/chat/{$this->token}?lookIntoFuture=0&limit=200");
		return array_reverse(is_array($data) ? $data : []);
	}

	/** The bot's messages as bob reads them. @return list<array<string, mixed>> */
	public function botMessages(): array {
		return array_values(array_filter($this->messages(), fn ($m) => $m['actorType'] === 'bots'));
	}

	/** Waits until the bot has posted `$count` messages (or 15 s); returns them. */
	public function waitForBotMessages(int $count): array {
		$deadline = microtime(true) + 15;
		do {
			$messages = $this->botMessages();
			if (count($messages) >= $count) {
				return $messages;
			}
			usleep(100000);
		} while (microtime(true) < $deadline);
		return $messages;
	}

	/**
	 * Sends a webhook straight to the app, as Talk would (or as an attacker would).
	 * @return int the HTTP status
	 */
	public function sendWebhook(string $raw, string $random, ?string $signature): int {
		$headers = ['Content-Type: application/json', 'OCS-APIRequest: true', 'X-Nextcloud-Talk-Random: ' . $random,
			'X-Nextcloud-Talk-Backend: ' . $this->nc->url . '/'];
		if ($signature !== null) {
			$headers[] = 'X-Nextcloud-Talk-Signature: ' . $signature;
		}
		$ch = curl_init($this->webhookUrl);
		curl_setopt_array($ch, [CURLOPT_POST => true, CURLOPT_RETURNTRANSFER => true, CURLOPT_TIMEOUT => 10,
			CURLOPT_HTTPHEADER => $headers, CURLOPT_POSTFIELDS => $raw]);
		curl_exec($ch);
		return curl_getinfo($ch, CURLINFO_RESPONSE_CODE);
	}

	/** A message webhook as Talk 21 writes it (PHP json_encode), for `users/$uid`. */
	public function webhookBody(string $actor, string $message, int $messageId = 999): string {
		return json_encode(['type' => 'Create',
			'actor' => ['type' => 'Person', 'id' => $actor, 'name' => 'Someone', 'talkParticipantType' => '3'],
			'object' => ['type' => 'Note', 'id' => (string)$messageId, 'name' => 'message',
				'content' => json_encode(['message' => $message, 'parameters' => []]), 'mediaType' => 'text/markdown'],
			'target' => ['type' => 'Collection', 'id' => $this->token, 'name' => 'Planning']]);
	}

	public function sign(string $random, string $raw, ?string $secret = null): string {
		return hash_hmac('sha256', $random . $raw, $secret ?? $this->secret);
	}

	/** What the app logged (level and message, as nextcloud.log would get them). */
	public function appLog(): string {
		return (string)@file_get_contents("{$this->dir}/app.log");
	}

	public function stop(): void {
		if (is_resource($this->process)) {
			$pid = (int)proc_get_status($this->process)['pid'];
			$children = @file_get_contents("/proc/$pid/task/$pid/children");
			foreach (array_filter(explode(' ', trim((string)$children))) as $child) {
				posix_kill_safe((int)$child);
			}
			posix_kill_safe($pid);
			proc_close($this->process);
		}
		exec('rm -rf ' . escapeshellarg($this->dir));
	}

	public function __destruct() {
		$this->stop();
	}
}
