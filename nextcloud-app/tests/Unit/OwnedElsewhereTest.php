<?php

declare(strict_types=1);

namespace OCA\Tamebi\Tests\Unit;

use OCA\Tamebi\Http\RelayResponse;
use OCA\Tamebi\Service\AppSettings;
use OCA\Tamebi\Service\Orchestrator;
use OCA\Tamebi\Tests\Stubs\RecordingOutput;

/**
 * The router and Retry-After (issue 15): every instance answers "owned elsewhere" while a dead
 * instance's lease runs out. A short Retry-After is waited out once, then the instances are
 * tried again; a long one, or one that did not help, goes to the browser with its header.
 * Real HTTP: the fake orchestrator under `php -S`, reached under two URLs (two "instances").
 */
final class OwnedElsewhereTest extends AppTestCase {
	protected function setUp(): void {
		parent::setUp();
		$this->giveToken();
		$port = parse_url($this->upstream->url, PHP_URL_PORT);
		$this->settings->set(AppSettings::ORCHESTRATOR_URL, "http://127.0.0.1:$port, http://localhost:$port");
	}

	/** @return list<float> when each orchestrator request arrived */
	private function arrivals(): array {
		return array_map(fn (array $r): float => (float)$r['at'], $this->orchestratorRequests());
	}

	public function testAShortRetryAfterIsWaitedOutOnceThenTheInstancesAreTriedAgain(): void {
		$this->upstream->ownedElsewhereFor(0.7, '1');
		$started = microtime(true);
		$response = $this->api()->conversations();
		self::assertSame(200, $response->getStatus(), $response->render());
		$at = $this->arrivals();
		self::assertCount(3, $at, 'both instances, then the first again after the wait');
		self::assertLessThan(0.5, $at[1] - $at[0], 'the second instance is tried at once');
		self::assertGreaterThanOrEqual(0.95, $at[2] - $at[1], 'the retry waits the Retry-After');
		self::assertLessThan(1.0 + Orchestrator::MAX_WAIT_S, microtime(true) - $started);
	}

	public function testAStreamedTurnWaitsTheSameWay(): void {
		$this->upstream->ownedElsewhereFor(0.7, '1');
		$this->upstream->release();
		$response = $this->api('{"id":"c1","messages":[{"id":"m1","role":"user","parts":[]}]}')->chat();
		self::assertInstanceOf(RelayResponse::class, $response);
		self::assertSame(200, $response->getStatus());
		$r = new \ReflectionProperty(RelayResponse::class, 'endOutputBuffers');
		$r->setValue($response, false);
		$output = new RecordingOutput();
		$response->callback($output);
		self::assertStringEndsWith("data: [DONE]\n\n", $output->body());
		$at = $this->arrivals();
		self::assertCount(3, $at);
		self::assertGreaterThanOrEqual(0.95, $at[2] - $at[1]);
	}

	/**
	 * Issue #27: the signature covers the path as sent, so each attempt is signed for its own
	 * instance's URL, base path included. The fake checks G1 before it says "owned elsewhere"
	 * (a 401 would end the failover at once), so both instances answering 503 means both
	 * attempts were signed for where they went.
	 */
	public function testEachAttemptIsSignedForItsOwnInstancesPath(): void {
		$port = parse_url($this->upstream->url, PHP_URL_PORT);
		$this->settings->set(AppSettings::ORCHESTRATOR_URL, "http://127.0.0.1:$port/base-one, http://127.0.0.1:$port/base-two");
		$this->upstream->ownedElsewhereFor(30, '30');
		$response = $this->api()->conversation('c1');
		self::assertSame(503, $response->getStatus(), $response->render());
		$sent = array_values(array_filter($this->upstream->requests(), fn (array $r): bool => str_starts_with($r['uri'], '/base-')));
		$uris = array_map(fn (array $r): string => $r['uri'], $sent);
		sort($uris);
		self::assertSame(['/base-one/v1/conversations/c1', '/base-two/v1/conversations/c1'], $uris);
		self::assertNotSame($sent[0]['headers']['x-tamebi-signature'], $sent[1]['headers']['x-tamebi-signature']);
		self::assertNotSame($sent[0]['headers']['x-tamebi-nonce'], $sent[1]['headers']['x-tamebi-nonce']);
	}

	public function testALongRetryAfterGoesToTheBrowserWithoutWaiting(): void {
		$this->upstream->ownedElsewhereFor(30, '30');
		$started = microtime(true);
		foreach ([fn () => $this->api()->conversations(), fn () => $this->api('{"id":"c1","messages":[]}')->chat()] as $call) {
			$response = $call();
			self::assertSame(503, $response->getStatus());
			self::assertSame('30', $response->getHeaders()['Retry-After'] ?? null);
			// Our own text for the code, and the wait in the body too: the chat transport sees only the body.
			self::assertSame(['message' => 'This conversation is being served by another server. Please try again in a moment.',
				'requestId' => 'req-123', 'code' => 'owned_elsewhere', 'retryAfter' => 30], $response->getData()['error']);
		}
		self::assertCount(4, $this->arrivals(), 'each instance once per request, no retry');
		self::assertLessThan(1.0, microtime(true) - $started, 'nothing waited');
	}

	public function testOneWaitAtMostThenTheBrowserIsTold(): void {
		$this->upstream->ownedElsewhereFor(10, '1');
		$started = microtime(true);
		$response = $this->api()->conversations();
		$elapsed = microtime(true) - $started;
		self::assertSame(503, $response->getStatus());
		self::assertSame('1', $response->getHeaders()['Retry-After'] ?? null);
		self::assertCount(4, $this->arrivals(), 'two passes over both instances');
		self::assertGreaterThanOrEqual(0.95, $elapsed);
		self::assertLessThan(2.5, $elapsed, 'one wait only');
	}

	public function testAnInstanceThatIsDownDoesNotHideTheOwnersAnswer(): void {
		// The dead instance is unreachable, the live one says "owned elsewhere" (by the dead one)
		// until its lease runs out: wait, try again, served.
		$port = parse_url($this->upstream->url, PHP_URL_PORT);
		$this->settings->set(AppSettings::ORCHESTRATOR_URL, "http://127.0.0.1:1, http://127.0.0.1:$port");
		$this->upstream->ownedElsewhereFor(0.7, '1');
		self::assertSame(200, $this->api()->conversations()->getStatus());
		self::assertCount(2, $this->arrivals());
	}
}
