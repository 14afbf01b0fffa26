<?php

declare(strict_types=1);

namespace OCA\Tamebi\Tests\Unit;

use OCA\Tamebi\Http\RelayResponse;
use OCA\Tamebi\Service\AppSettings;
use OCA\Tamebi\Service\Router;
use OCA\Tamebi\Tests\Stubs\RecordingOutput;
use OCP\AppFramework\Http\JSONResponse;

/** The chat proxy: G1 headers, SSE pass-through without buffering, refusals and error mapping. */
final class RelayTest extends AppTestCase {
	private const UNREACHABLE = 'A service this needs could not be reached or gave no usable answer. It is not known whether anything was done: check before trying again.';

	private function relayResponse(string $chatId): RelayResponse {
		$response = $this->api('{"id":"' . $chatId . '","messages":[{"id":"m1","role":"user","parts":[]}]}')->chat();
		self::assertInstanceOf(RelayResponse::class, $response);
		// Tests run inside PHPUnit's own output buffer, which must survive.
		$r = new \ReflectionProperty(RelayResponse::class, 'endOutputBuffers');
		$r->setValue($response, false);
		return $response;
	}

	public function testSseChunksReachTheBrowserBeforeTheStreamEnds(): void {
		$this->giveToken();
		$response = $this->relayResponse('c1');
		self::assertSame(200, $response->getStatus());
		$headers = $response->getHeaders();
		self::assertStringStartsWith('text/event-stream', $headers['Content-Type']);
		self::assertSame('v1', $headers['x-vercel-ai-ui-message-stream']);
		self::assertSame('no', $headers['X-Accel-Buffering']);
		self::assertSame('connected', $headers['X-Tamebi-Workspace']);

		// The fake orchestrator holds the rest of the answer until the first frame has arrived
		// here; a buffering relay would only deliver it after the upstream ended ("not-released").
		$output = new RecordingOutput(function (string $chunk): void {
			if (str_contains($chunk, 'frame-1')) {
				$this->upstream->release();
			}
		});
		$response->callback($output);

		$body = $output->body();
		self::assertStringContainsString('"delta":"released"', $body);
		self::assertStringNotContainsString('not-released', $body);
		self::assertStringEndsWith("data: [DONE]\n\n", $body);
		self::assertGreaterThan(1, count($output->writes));
		self::assertStringNotContainsString('[DONE]', $output->writes[0][1]);
	}

	public function testG1HeadersAreSentAndVerifiedUpstream(): void {
		$this->giveToken('access-xyz');
		$response = $this->api()->conversations();
		self::assertSame(200, $response->getStatus());
		self::assertSame(['conversations' => [['id' => 'c1', 'title' => 'Hello', 'createdAt' => 1, 'updatedAt' => 2]]],
			json_decode($response->render(), true));
		$sent = $this->orchestratorRequests()[0]['headers'];
		self::assertSame('alice', $sent['x-tamebi-uid']);
		self::assertSame('nextcloud=access-xyz', $sent['x-tamebi-credentials']);
		self::assertArrayNotHasKey('x-tamebi-nc-authorization', $sent);
		self::assertSame('req-123', $sent['x-request-id']);
		self::assertMatchesRegularExpression('/^[0-9a-f]{32}$/', $sent['x-tamebi-nonce']);
		// Issue 10.4: the credentials header is inside the signature; issue #27: so are the
		// method, the path and the (empty) query it was sent to.
		$signed = "GET\n/v1/conversations\n\nalice\n" . $sent['x-tamebi-ts'] . "\n" . $sent['x-tamebi-nonce'] . "\n" . hash('sha256', '') . "\n"
			. hash('sha256', 'nextcloud=access-xyz');
		self::assertSame(hash_hmac('sha256', $signed, self::SIGNING), $sent['x-tamebi-signature']);
	}

	/** Issue 10.1: each MCP server's token goes out under its own name; every request has a new nonce. */
	public function testEachAudienceTokenTravelsUnderItsOwnServerName(): void {
		$this->settings->set(\OCA\Tamebi\Service\AppSettings::MCP_AUDIENCES, json_encode(['mail' => 'https://mail.example.test/mcp']));
		$this->giveToken('access-nc', 600, 'nextcloud');
		$this->giveToken('access-mail', 600, 'mail');
		$this->api()->conversations();
		$this->api()->conversations();
		[$first, $second] = $this->orchestratorRequests();
		self::assertSame('nextcloud=access-nc, mail=access-mail', $first['headers']['x-tamebi-credentials']);
		self::assertNotSame($first['headers']['x-tamebi-nonce'], $second['headers']['x-tamebi-nonce']);
	}

	public function testWithoutTokenNoNcAuthorizationIsSentAndTheIslandIsTold(): void {
		// No token, no live session cookie for the silent flow: not connected.
		$this->request = new \OCA\Tamebi\Tests\Stubs\FakeRequest('req-9', ['Cookie' => 'tracker=1']);
		$this->setUpRelayWith($this->request);
		$response = $this->api()->conversations();
		self::assertSame(200, $response->getStatus());
		self::assertSame('disconnected', $response->getHeaders()['X-Tamebi-Workspace']);
		self::assertArrayNotHasKey('x-tamebi-credentials', $this->orchestratorRequests()[0]['headers']);
	}

	/** @return iterable<string, array{string}> */
	public static function identityBodies(): iterable {
		yield 'uid' => ['{"uid":"bob","id":"c1","messages":[]}'];
		yield 'user' => ['{"id":"c1","user":"bob","messages":[]}'];
		yield 'userId' => ['{"id":"c1","messages":[],"userId":"bob"}'];
		yield 'null uid' => ['{"id":"c1","messages":[],"uid":null}'];
	}

	/** @dataProvider identityBodies */
	public function testUidInBodyIsRefusedAndNothingIsSent(string $body): void {
		foreach (['chat', 'toolsCall', 'toolsDispatch', 'toolsDescribe'] as $route) {
			$response = $this->api($body)->$route();
			self::assertInstanceOf(JSONResponse::class, $response);
			self::assertSame(400, $response->getStatus());
			self::assertSame(['error' => ['message' => 'The request was not understood.', 'requestId' => 'req-123']], $response->getData());
		}
		self::assertSame([], $this->orchestratorRequests());
	}

	public function testMalformedBodiesAndIdsAreRefusedAndNothingIsSent(): void {
		self::assertSame(400, $this->api('not json')->chat()->getStatus());
		self::assertSame(400, $this->api('[1,2]')->toolsCall()->getStatus());
		self::assertSame(413, $this->api('{"a":"' . str_repeat('x', 1048577) . '"}')->chat()->getStatus());
		self::assertSame(400, $this->api()->conversation('../../admin')->getStatus());
		self::assertSame(400, $this->api()->resume(str_repeat('a', 65))->getStatus());
		self::assertSame([], $this->orchestratorRequests());
	}

	public function testNestedUidIsOnlyData(): void {
		$this->giveToken();
		$response = $this->api('{"server":"files","name":"t","arguments":{"uid":"someone"}}')->toolsCall();
		self::assertSame(200, $response->getStatus());
		self::assertSame('{"server":"files","name":"t","arguments":{"uid":"someone"}}', $this->orchestratorRequests()[0]['body']);
	}

	public function testUpstreamErrorsKeepTheStatusButNeverTheBody(): void {
		$this->giveToken();
		foreach ([[fn () => $this->api()->conversation('other'), 404, 'Not found.'],
			[fn () => $this->api()->deleteConversation('explode'), 500, 'Something went wrong. Please try again.'],
			[fn () => $this->api('{"id":"busy","messages":[]}')->chat(), 409, 'A reply is already being written in this conversation.'],
			// Never "try again" for these: what was asked may have been done.
			[fn () => $this->api()->conversation('timeout'), 504, 'No answer came in time. It is not known whether anything was done: check before trying again.'],
			[fn () => $this->api()->conversation('unreachable'), 502, self::UNREACHABLE],
		] as [$call, $status, $message]) {
			$response = $call();
			self::assertSame($status, $response->getStatus());
			self::assertSame(['error' => ['message' => $message, 'requestId' => 'req-123']], $response->getData());
			self::assertStringNotContainsString('hunter2', $response->render());
			self::assertSame('req-123', $response->getHeaders()['X-Request-Id']);
		}
		// Internals are kept for the operator, in the log.
		self::assertStringContainsString('hunter2', $this->logger->text());
	}

	public function testAKnownRefusalCodePicksOurOwnTextAndIsPassedOn(): void {
		$this->giveToken();
		foreach ([
			// The stream door (chat) and the buffered door (a conversation) read the code alike.
			[fn () => $this->api('{"id":"refuse-409-message_id_taken","messages":[]}')->chat(), 409, 'message_id_taken',
				'Another message of this conversation already has this id. Send the message under a new id.'],
			[fn () => $this->api('{"id":"refuse-400-approvals_undecided","messages":[]}')->chat(), 400, 'approvals_undecided',
				'Decide every approval this reply asked for, then send them together.'],
			[fn () => $this->api()->conversation('refuse-409-message_id_taken'), 409, 'message_id_taken',
				'Another message of this conversation already has this id. Send the message under a new id.'],
			[fn () => $this->api()->conversation('refuse-409-reply_in_progress'), 409, 'reply_in_progress',
				'A reply is already being written in this conversation.'],
			[fn () => $this->api()->conversation('refuse-503-owned_elsewhere'), 503, 'owned_elsewhere',
				'This conversation is being served by another server. Please try again in a moment.'],
			[fn () => $this->api()->conversation('refuse-429-too_fast'), 429, 'too_fast',
				'You are sending messages faster than allowed. Wait a moment, then send again.'],
		] as [$call, $status, $code, $message]) {
			$response = $call();
			self::assertSame($status, $response->getStatus(), $code);
			self::assertSame(['error' => ['message' => $message, 'requestId' => 'req-123', 'code' => $code]], $response->getData());
			self::assertStringNotContainsString('hunter2', $response->render());
		}
	}

	public function testAnUnknownMisplacedOrHostileCodeFallsBackToTheStatusText(): void {
		$this->giveToken();
		$hostile = '<img src=x onerror=alert(1)> DB_PASSWORD=hunter2';
		foreach ([
			// Unknown to us (a newer orchestrator, say): the status text, no code.
			[fn () => $this->api()->conversation('refuse-409-some_new_kind'), 409, 'A reply is already being written in this conversation.'],
			// A known code under another status is not believed.
			[fn () => $this->api()->conversation('refuse-500-message_id_taken'), 500, 'Something went wrong. Please try again.'],
			[fn () => $this->api('{"id":"refuse-400-message_id_taken","messages":[]}')->chat(), 400, 'The request was not understood.'],
			// Anything at all in the code, on either door: it never reaches the browser.
			[fn () => $this->api(json_encode(['id' => "refuse-409-$hostile", 'messages' => []]))->chat(), 409,
				'A reply is already being written in this conversation.'],
			[fn () => $this->api(json_encode(['id' => 'refuse-409-message_id_taken ', 'messages' => []]))->chat(), 409,
				'A reply is already being written in this conversation.'],
		] as [$call, $status, $message]) {
			$response = $call();
			self::assertSame($status, $response->getStatus());
			self::assertSame(['error' => ['message' => $message, 'requestId' => 'req-123']], $response->getData());
			self::assertStringNotContainsString('hunter2', $response->render());
			self::assertStringNotContainsString('onerror', $response->render());
		}
		// The operator still sees what came, in the log.
		self::assertStringContainsString('some_new_kind', $this->logger->text());
	}

	public function testResumeWithNothingInFlightIs204AndDeleteIs204(): void {
		$this->giveToken();
		self::assertSame(204, $this->api()->resume('c1')->getStatus());
		self::assertSame(204, $this->api()->deleteConversation('c1')->getStatus());
	}

	public function testStopIsASignedPostForTheSignedUserAndPassesTheStatusOn(): void {
		$this->giveToken();
		self::assertSame(204, $this->api()->stopChat('c1')->getStatus());
		// Unknown (or another user's: the orchestrator cannot tell them apart) is a 404 in our own words.
		$unknown = $this->api()->stopChat('other');
		self::assertSame(404, $unknown->getStatus());
		self::assertSame(['error' => ['message' => 'Not found.', 'requestId' => 'req-123']], $unknown->getData());
		$sent = $this->orchestratorRequests();
		self::assertSame(['POST /v1/chat/c1/stop', 'POST /v1/chat/other/stop'],
			array_map(fn (array $r): string => $r['method'] . ' ' . $r['uri'], $sent));
		foreach ($sent as $r) {
			self::assertSame('alice', $r['headers']['x-tamebi-uid']);
			self::assertSame('', $r['body']);
		}
	}

	public function testStopOfAMalformedIdSendsNothing(): void {
		foreach (['../../admin', str_repeat('a', 65), 'a b', ''] as $id) {
			self::assertSame(400, $this->api()->stopChat($id)->getStatus(), $id);
		}
		self::assertSame([], $this->orchestratorRequests());
	}

	/** Like every island route: a POST behind the session and Nextcloud's CSRF check (no NoCSRFRequired). */
	public function testTheStopRouteIsAPostWithTheSessionAndTheCsrfCheck(): void {
		$routes = (require dirname(__DIR__, 2) . '/appinfo/routes.php')['routes'];
		$stop = array_values(array_filter($routes, fn (array $r): bool => $r['name'] === 'api#stopChat'));
		self::assertSame([['name' => 'api#stopChat', 'url' => '/api/chat/{id}/stop', 'verb' => 'POST']], $stop);
		$attributes = fn (string $method): array => array_map(fn (\ReflectionAttribute $a): string => $a->getName(),
			(new \ReflectionMethod(\OCA\Tamebi\Controller\ApiController::class, $method))->getAttributes());
		self::assertSame($attributes('resume'), $attributes('stopChat'));
		self::assertNotContains('OCP\AppFramework\Http\Attribute\NoCSRFRequired', $attributes('stopChat'));
	}

	public function testMemoryAndErasureAreForwardedForTheSignedUserOnly(): void {
		$this->giveToken();
		self::assertSame('Likes tea', json_decode($this->api()->memory()->render(), true)['facts'][0]['text']);
		self::assertSame(204, $this->api()->forgetMemory('7')->getStatus());
		self::assertSame(404, $this->api()->forgetMemory('8')->getStatus());
		self::assertSame(1, json_decode($this->api()->eraseMyData()->render(), true)['erased']['memoryFacts']);
		$sent = $this->orchestratorRequests();
		self::assertSame(['GET /v1/memory', 'DELETE /v1/memory/7', 'DELETE /v1/memory/8', 'DELETE /v1/me/data'],
			array_map(fn (array $r): string => $r['method'] . ' ' . $r['uri'], $sent));
		foreach ($sent as $r) {
			self::assertSame('alice', $r['headers']['x-tamebi-uid']);
		}
	}

	public function testMalformedFactIdsAreRefusedAndNothingIsSent(): void {
		foreach (['0', '-1', 'x', '1/../../me/data', str_repeat('9', 19)] as $id) {
			self::assertSame(400, $this->api()->forgetMemory($id)->getStatus(), $id);
		}
		self::assertSame([], $this->orchestratorRequests());
	}

	public function testBadSignatureSecretSurfacesAs401WithoutDetail(): void {
		$this->giveToken();
		$this->settings->set(AppSettings::SIGNING_SECRET, 'wrong');
		$response = $this->api()->conversations();
		self::assertSame(401, $response->getStatus());
		self::assertSame('Not signed in.', $response->getData()['error']['message']);
	}

	public function testUnreachableOrchestratorIs502AndUnconfiguredIs503(): void {
		$this->giveToken();
		$this->settings->set(AppSettings::ORCHESTRATOR_URL, 'http://127.0.0.1:1');
		$response = $this->api('{"id":"c1","messages":[]}')->chat();
		self::assertSame(502, $response->getStatus());
		self::assertSame(['error' => ['message' => self::UNREACHABLE, 'requestId' => 'req-123']], $response->getData());
		self::assertStringNotContainsString('127.0.0.1', $response->render());

		$this->settings->set(AppSettings::PROXY_SECRET, '');
		self::assertSame(503, $this->api()->conversations()->getStatus());
	}

	public function testAnUnreachableInstanceFailsOverToTheNextInTheConversationsOrder(): void {
		$this->giveToken();
		$dead = 'http://127.0.0.1:1';
		$this->settings->set(AppSettings::ORCHESTRATOR_URL, $dead . ', ' . $this->upstream->url);
		// A conversation whose first choice is the dead instance, so failover is what serves it.
		$chatId = '';
		for ($i = 0; $chatId === ''; $i++) {
			if (Router::order([$dead, $this->upstream->url], Router::keyFor('/v1/chat/c' . $i . '/stream', '', 'alice'))[0] === $dead) {
				$chatId = "c$i";
			}
		}
		self::assertSame($dead, Router::order([$dead, $this->upstream->url], "c:alice:$chatId")[0]);
		$response = $this->relayResponse($chatId);
		self::assertSame(200, $response->getStatus());
		$output = new RecordingOutput();
		$this->upstream->release();
		$response->callback($output);
		self::assertStringEndsWith("data: [DONE]\n\n", $output->body());
		// Buffered requests fail over too (routed by uid).
		self::assertSame(200, $this->api()->conversations()->getStatus());
		// With every instance down the answer is the usual 502.
		$this->settings->set(AppSettings::ORCHESTRATOR_URL, 'http://127.0.0.1:1, http://127.0.0.1:2');
		self::assertSame(502, $this->api('{"id":"c1","messages":[]}')->chat()->getStatus());
	}

	public function testStreamThatBreaksEndsWithAGenericErrorPart(): void {
		$this->giveToken();
		$this->upstream->release();
		$response = $this->relayResponse('cut');
		$output = new RecordingOutput();
		$response->callback($output);
		$body = $output->body();
		self::assertStringContainsString('"delta":"released"', $body);
		self::assertStringContainsString('"type":"error","errorText":"' . self::UNREACHABLE . ' (request id: req-123)"', $body);
		self::assertStringNotContainsString('127.0.0.1', $body);
		self::assertStringEndsWith("data: [DONE]\n\n", $body);
	}

	private function setUpRelayWith(\OCA\Tamebi\Tests\Stubs\FakeRequest $request): void {
		$this->tokens = new \OCA\Tamebi\Service\TokenService($this->session, $request,
			new \OCA\Tamebi\Tests\Stubs\FakeConfig(['instanceid' => 'ocabc']), $this->flow, $this->clock, $this->logger, $this->settings);
		$this->relay = new \OCA\Tamebi\Service\Relay($this->orchestrator, $this->tokens,
			new \OCA\Tamebi\Tests\Stubs\FakeUserSession(new \OCA\Tamebi\Tests\Stubs\FakeUser('alice')), $request, $this->logger,
			new \OCA\Tamebi\Tests\Stubs\FakeL10N());
	}
}
