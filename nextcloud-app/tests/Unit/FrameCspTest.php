<?php

declare(strict_types=1);

namespace OCA\Tamebi\Tests\Unit;

use OCA\Tamebi\Controller\FrameController;
use OCA\Tamebi\Http\FrameResponse;
use OCA\Tamebi\Tests\Stubs\FakeUser;
use OCA\Tamebi\Tests\Stubs\FakeUserSession;
use OCP\AppFramework\Http\ContentSecurityPolicy;
use OCP\AppFramework\Http\EmptyContentSecurityPolicy;
use OCP\AppFramework\Http\JSONResponse;

/** The frame document is served with exactly the orchestrator's policy, whatever Nextcloud adds. */
final class FrameCspTest extends AppTestCase {
	private const POLICY = "default-src 'none'; script-src 'sha256-abc='; connect-src 'none'; frame-ancestors 'self'";

	public function testNextcloudPolicyObjectsCannotReplaceOrExtendTheHeader(): void {
		$response = new FrameResponse('<p>app</p>', self::POLICY);
		// What Nextcloud's CSP middleware does to an ordinary response: its default policy with a nonce.
		$default = new ContentSecurityPolicy();
		$default->useJsNonce('nonce-value');
		$default->useStrictDynamic(true);
		$response->setContentSecurityPolicy($default);

		$csp = array_values(array_filter($response->getHeaders(), fn ($k) => strcasecmp($k, 'Content-Security-Policy') === 0, ARRAY_FILTER_USE_KEY));
		self::assertSame([self::POLICY], $csp);
		self::assertStringNotContainsString('nonce', implode(' ', $response->getHeaders()));
		self::assertStringNotContainsString('strict-dynamic', implode(' ', $response->getHeaders()));
		// The CSP middleware compares the exact class and leaves an empty policy alone.
		self::assertSame(EmptyContentSecurityPolicy::class, get_class($response->getContentSecurityPolicy()));
		self::assertSame('<p>app</p>', $response->render());
	}

	public function testFrameIsServedWithTheOrchestratorsExactPolicy(): void {
		$this->giveToken();
		$controller = new FrameController($this->request, $this->orchestrator, $this->tokens,
			new FakeUserSession(new FakeUser('alice')), $this->relay);
		$response = $controller->show('files', 'ui://files/preview.html', 'conv_1');
		self::assertInstanceOf(FrameResponse::class, $response);

		$sent = $this->orchestratorRequests();
		self::assertCount(1, $sent);
		self::assertSame('/v1/apps/resource?server=files&uri=ui%3A%2F%2Ffiles%2Fpreview.html&conversation=conv_1', $sent[0]['uri']);
		self::assertSame('nextcloud=access-live', $sent[0]['headers']['x-tamebi-credentials']);
		$expected = "default-src 'none'; script-src 'sha256-" . base64_encode(hash('sha256', 'document.body.dataset.ok = "1"', true))
			. "'; connect-src 'none'; img-src data:; frame-ancestors 'self'; base-uri 'none'; form-action 'none'";
		self::assertSame($expected, $response->getHeaders()['Content-Security-Policy']);
		self::assertStringContainsString('<script>', $response->render());
	}

	public function testDocumentWithoutPolicyIsRefused(): void {
		$controller = new FrameController($this->request, $this->orchestrator, $this->tokens,
			new FakeUserSession(new FakeUser('alice')), $this->relay);
		$response = $controller->show('nocsp', 'ui://x/y');
		self::assertInstanceOf(JSONResponse::class, $response);
		self::assertSame(502, $response->getStatus());
	}

	public function testMalformedTargetsSendNothing(): void {
		$controller = new FrameController($this->request, $this->orchestrator, $this->tokens,
			new FakeUserSession(new FakeUser('alice')), $this->relay);
		foreach ([['../x', 'ui://a'], ['files', 'https://evil.example/'], ['files', "ui://a\nb"], ['', 'ui://a']] as [$server, $uri]) {
			self::assertSame(400, $controller->show($server, $uri)->getStatus());
		}
		foreach (['../c', 'c 1', str_repeat('c', 65)] as $conversation) {
			self::assertSame(400, $controller->show('files', 'ui://files/preview.html', $conversation)->getStatus());
		}
		self::assertSame([], $this->orchestratorRequests());
	}
}
