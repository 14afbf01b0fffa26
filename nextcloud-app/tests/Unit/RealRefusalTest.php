<?php

declare(strict_types=1);

namespace OCA\Tamebi\Tests\Unit;

use OCA\Tamebi\Http\RelayResponse;
use OCA\Tamebi\Service\AppSettings;
use OCA\Tamebi\Service\Orchestrator;
use OCA\Tamebi\Tests\RealOrchestrator;
use OCA\Tamebi\Tests\Stubs\CurlClientService;
use OCA\Tamebi\Tests\Stubs\FakeClock;
use OCA\Tamebi\Tests\Stubs\RecordingOutput;

/**
 * The real orchestrator binary's refusal codes through the app: a user message sent again under
 * the id of an earlier one is the orchestrator's own 409 `message_id_taken`, and the browser gets
 * the app's text for that code, not the one every 409 used to get. And the app's G1 signature,
 * checked by the real verifier: good for the route it was made for, refused on any other.
 */
final class RealRefusalTest extends AppTestCase {
	private ?RealOrchestrator $real = null;

	protected function tearDown(): void {
		$this->real?->stop();
		parent::tearDown();
	}

	/** Sends one user message of conversation `c-reuse` through the app's chat route. */
	private function send(string $id, string $text): \OCP\AppFramework\Http\Response {
		return $this->api(json_encode(['id' => 'c-reuse', 'messages' => [
			['id' => $id, 'role' => 'user', 'parts' => [['type' => 'text', 'text' => $text]]],
		]]))->chat();
	}

	public function testAReusedMessageIdShowsTheTextOfItsCode(): void {
		$this->real = new RealOrchestrator(self::PROXY, self::SIGNING);
		$this->settings->set(AppSettings::ORCHESTRATOR_URL, $this->real->url);
		$this->giveToken();
		foreach (['m1' => 'first words', 'm2' => 'second words'] as $id => $text) {
			$response = $this->send($id, $text);
			self::assertInstanceOf(RelayResponse::class, $response, $response->render());
			// The model is unreachable: the turn ends with an error part, its user message stored.
			$r = new \ReflectionProperty(RelayResponse::class, 'endOutputBuffers');
			$r->setValue($response, false);
			$response->callback(new RecordingOutput());
		}
		$refused = $this->send('m1', 'other words');
		self::assertSame(409, $refused->getStatus());
		self::assertSame(['error' => [
			'message' => 'Another message of this conversation already has this id. Send the message under a new id.',
			'requestId' => 'req-123',
			'code' => 'message_id_taken',
		]], $refused->getData());
	}

	/** Sends `$headers` as they are with `$method` to `$url`: (status, body). */
	private static function raw(string $method, string $url, array $headers): array {
		$lines = [];
		foreach ($headers as $name => $value) {
			$lines[] = "$name: $value";
		}
		$curl = curl_init($url);
		curl_setopt_array($curl, [CURLOPT_CUSTOMREQUEST => $method, CURLOPT_HTTPHEADER => $lines, CURLOPT_RETURNTRANSFER => true]);
		$body = (string)curl_exec($curl);
		$status = (int)curl_getinfo($curl, CURLINFO_RESPONSE_CODE);
		curl_close($curl);
		return [$status, $body];
	}

	/**
	 * Issue #27: the real orchestrator accepts what the app signs for a read, a delete, a query
	 * and the erasure route, and refuses the headers of a signed GET /v1/conversations sent as
	 * DELETE /v1/me/data or with a query: 401, after which the GET itself still works.
	 */
	public function testTheAppsSignatureHoldsForItsOwnRouteOnly(): void {
		$this->real = new RealOrchestrator(self::PROXY, self::SIGNING);
		$this->settings->set(AppSettings::ORCHESTRATOR_URL, $this->real->url);
		$orchestrator = new Orchestrator($this->settings, new CurlClientService(), new FakeClock());
		foreach ([
			['GET', '/v1/conversations', 200],
			// Signed correctly, refused for what they ask: no such conversation.
			['DELETE', '/v1/conversations/c-none', 404],
			['GET', '/v1/apps/resource?server=nextcloud&uri=ui%3A%2F%2Fnextcloud%2Fx&conversation=c-none', 403],
			['DELETE', '/v1/me/data', 200],
		] as [$method, $path, $status]) {
			$reply = $orchestrator->send($method, $path, 'alice', '', [], 'req-own');
			self::assertSame($status, $reply->status, "$method $path: {$reply->body}");
		}
		$url = $this->real->url . '/v1/conversations';
		$headers = $orchestrator->headers('GET', $url, 'alice', '', [], 'req-moved');
		foreach ([['DELETE', $this->real->url . '/v1/me/data'], ['GET', $url . '?limit=1'], ['GET', $url . '/c-none']] as [$method, $moved]) {
			[$status, $body] = self::raw($method, $moved, $headers);
			self::assertSame(401, $status, "$method $moved: $body");
			self::assertSame('unauthorized', json_decode($body, true)['error']['code'] ?? null, $body);
		}
		[$status, $body] = self::raw('GET', $url, $headers);
		self::assertSame(200, $status, $body);
	}
}
