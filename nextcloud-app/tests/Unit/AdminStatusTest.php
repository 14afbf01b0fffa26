<?php

declare(strict_types=1);

namespace OCA\Tamebi\Tests\Unit;

use OCA\Tamebi\Controller\AdminController;
use OCA\Tamebi\Service\AdminStatus;
use OCA\Tamebi\Service\AppSettings;
use OCA\Tamebi\Service\Orchestrator;
use OCA\Tamebi\Service\Checks;
use OCA\Tamebi\Service\Signer;
use OCA\Tamebi\Settings\Admin;
use OCA\Tamebi\Tests\RealOrchestrator;
use OCA\Tamebi\Tests\Stubs\CurlClientService;
use OCA\Tamebi\Tests\Stubs\FakeAppManager;
use OCA\Tamebi\Tests\Stubs\FakeConfig;
use OCA\Tamebi\Tests\Stubs\FakeClock;
use OCA\Tamebi\Tests\Stubs\FakeGroupManager;
use OCA\Tamebi\Tests\Stubs\FakeL10N;
use OCA\Tamebi\Tests\Stubs\FakeUrlGenerator;
use OCA\Tamebi\Tests\Stubs\FakeUser;
use OCA\Tamebi\Tests\Stubs\FakeUserSession;
use OCA\Tamebi\Tests\Stubs\MemoryAppConfig;

/**
 * The admin status: signed for an admin only (IGroupManager asked first), never with a user's
 * token, refused by the real orchestrator binary without the admin signature (its own 403,
 * passed through), and shown read-only and escaped on the settings page (fed by the fake
 * upstream, whose status has every case the page renders).
 */
final class AdminStatusTest extends AppTestCase {
	private ?RealOrchestrator $real = null;

	protected function tearDown(): void {
		$this->real?->stop();
		parent::tearDown();
	}

	private function status(string $uid, array $admins, ?Orchestrator $orchestrator = null): AdminStatus {
		return new AdminStatus($orchestrator ?? $this->orchestrator, new FakeUserSession(new FakeUser($uid)), new FakeGroupManager($admins), $this->logger, new FakeL10N());
	}

	/** The app's orchestrator client pointed at the real binary, signing with `$signing`. */
	private function realOrchestrator(string $signing = self::SIGNING): Orchestrator {
		$this->real ??= new RealOrchestrator(self::PROXY, self::SIGNING);
		$settings = new AppSettings(new MemoryAppConfig());
		$settings->set(AppSettings::ORCHESTRATOR_URL, $this->real->url);
		$settings->set(AppSettings::PROXY_SECRET, self::PROXY);
		$settings->set(AppSettings::SIGNING_SECRET, $signing);
		return new Orchestrator($settings, new CurlClientService(), new FakeClock());
	}

	public function testAnAdminGetsTheStatusWithTheAdminSignatureAndNoToken(): void {
		$this->giveToken('access-must-not-travel');
		$result = $this->status('root', ['root'])->fetch('req-9');
		self::assertTrue($result['ok'], $result['error']);
		self::assertSame('planner', $result['status']['assistants'][0]['name']);
		$sent = $this->orchestratorRequests();
		self::assertCount(1, $sent);
		self::assertSame('/v1/admin/status', $sent[0]['uri']);
		$h = array_change_key_case($sent[0]['headers'], CASE_LOWER);
		self::assertSame('root', $h['x-tamebi-uid']);
		self::assertArrayNotHasKey('x-tamebi-credentials', $h, 'no user token on an admin route');
		self::assertStringNotContainsString('access-must-not-travel', json_encode($sent));
		// Over the same target as the user signature (issue #27): GET, the path, an empty query.
		$expected = hash_hmac('sha256', "tamebi-admin-v2\nGET\n/v1/admin/status\n\nroot\n" . $h['x-tamebi-ts'] . "\n" . $h['x-tamebi-nonce'], self::SIGNING);
		self::assertSame($expected, $h['x-tamebi-admin-signature']);
	}

	public function testANonAdminIsNeverSigned(): void {
		$groups = new FakeGroupManager(['root']);
		$status = new AdminStatus($this->orchestrator, new FakeUserSession(new FakeUser('alice')), $groups, $this->logger, new FakeL10N());
		$result = $status->fetch();
		self::assertFalse($result['ok']);
		self::assertSame(403, $result['code']);
		self::assertSame(['alice'], $groups->asked);
		self::assertSame([], $this->orchestratorRequests(), 'nothing was sent for a non-admin');
		$response = (new AdminController($this->request, $status))->status();
		self::assertSame(403, $response->getStatus());
	}

	public function testAUserSignatureAloneIsRefusedByTheOrchestratorItself(): void {
		$real = $this->realOrchestrator();
		// What a non-admin path could produce at best: the ordinary G1 headers, no admin signature,
		// even for an admin's uid. The refusal is the orchestrator's own, in its error shape.
		foreach (['alice', 'root'] as $uid) {
			$reply = $real->send('GET', AdminStatus::PATH, $uid, '', [], "req-user-$uid");
			self::assertSame(403, $reply->status, $reply->body);
			$error = json_decode($reply->body, true)['error'] ?? null;
			self::assertIsArray($error, $reply->body);
			self::assertSame("req-user-$uid", $error['requestId']);
			self::assertStringNotContainsString('planner', $reply->body);
		}
		// The same uid with the admin signature is answered: the signature made the difference.
		$result = $this->status('root', ['root'], $real)->fetch('req-admin');
		self::assertTrue($result['ok'], $result['error']);
		self::assertSame('nextcloud', $result['status']['servers'][0]['name']);
		self::assertSame('default', $result['status']['assistants'][0]['name']);
	}

	public function testTheOrchestratorsRefusalOfABadSignatureReachesThePage(): void {
		// An app whose signing secret is not the orchestrator's (a rotation half done): the
		// orchestrator refuses, and the page says the orchestrator refused, with its status.
		$result = $this->status('root', ['root'], $this->realOrchestrator('another-signing-secret-0123456789abcdef01234'))->fetch('req-bad');
		self::assertFalse($result['ok']);
		self::assertNull($result['status']);
		self::assertSame('The orchestrator refused the status request (HTTP 401).', $result['error']);
		$html = $this->render(['orchestrator' => $result]);
		self::assertStringContainsString('The orchestrator refused the status request (HTTP 401).', $html);
	}

	public function testTheSignatureMatchesTheSharedVectors(): void {
		// testdata/g1-vectors.json's admin_vectors, which src/auth/identity.rs verifies too.
		$data = json_decode((string)file_get_contents(dirname(__DIR__, 3) . '/testdata/g1-vectors.json'), true, 512, JSON_THROW_ON_ERROR);
		$signer = new Signer($data['proxy_secret'], $data['signing_secret']);
		self::assertNotEmpty($data['admin_vectors']);
		foreach ($data['admin_vectors'] as $v) {
			self::assertSame($v['signature'], $signer->adminSignature($v['method'], $v['path'], $v['query'], $v['uid'], $v['ts'], $v['nonce']),
				$v['signed_string']);
			$url = 'http://orchestrator:8700' . $v['path'] . ($v['query'] === '' ? '' : '?' . $v['query']);
			$h = $signer->adminHeaders($url, $v['uid'], $v['ts'], $v['nonce']);
			self::assertSame($v['signature'], $h['X-Tamebi-Admin-Signature']);
			self::assertSame($signer->signature('GET', $v['path'], $v['query'], $v['uid'], $v['ts'], $v['nonce'], '', ''), $h['X-Tamebi-Signature']);
			self::assertNotSame($h['X-Tamebi-Signature'], $h['X-Tamebi-Admin-Signature']);
		}
		// The admin GET's user signature is a shared vector of its own.
		$user = array_values(array_filter($data['vectors'], fn (array $v): bool => $v['path'] === '/v1/admin/status'));
		self::assertCount(1, $user);
		$h = $signer->adminHeaders('http://orchestrator:8700/v1/admin/status', $user[0]['uid'], $user[0]['ts'], $user[0]['nonce']);
		self::assertSame($user[0]['signature'], $h['X-Tamebi-Signature']);
	}

	public function testTheControllerAnswersJsonForAnAdmin(): void {
		$response = (new AdminController($this->request, $this->status('root', ['root'])))->status();
		self::assertSame(200, $response->getStatus());
		self::assertSame('nextcloud', $response->getData()['servers'][0]['name']);
	}

	public function testTheIslandsAssistantListIsRelayedForTheSignedUser(): void {
		$body = json_decode($this->api()->assistants()->render(), true);
		self::assertSame('default', $body['default']);
		$sent = $this->orchestratorRequests();
		self::assertSame('GET /v1/assistants', $sent[0]['method'] . ' ' . $sent[0]['uri']);
		self::assertSame('alice', $sent[0]['headers']['x-tamebi-uid']);
		self::assertArrayNotHasKey('x-tamebi-admin-signature', $sent[0]['headers']);
	}

	public function testTheSettingsPageListsAssistantsAndServersReadOnly(): void {
		$html = $this->render(['orchestrator' => $this->status('root', ['root'])->fetch()]);
		self::assertStringContainsString('planner', $html);
		self::assertStringContainsString('Calendar &lt;b&gt;only&lt;/b&gt;.', $html, 'orchestrator text is escaped');
		self::assertStringContainsString('nextcloud/calendar_*', $html);
		self::assertStringContainsString('yes (asks for the user&#039;s sign-in)', $html);
		self::assertStringContainsString('21 (seen in users&#039; listings)', $html);
		self::assertStringContainsString('no answer', $html);
		self::assertStringContainsString('failing (tool.timeout), circuit open', $html);
		self::assertStringNotContainsString('<input', $html, 'read-only');
		$html = $this->render(['orchestrator' => $this->status('alice', ['root'])->fetch()]);
		self::assertStringContainsString('Only administrators', $html);
	}

	public function testTheSettingsFormLoadsTheRegistryEditorWithTheOcsBaseUnderTheWebroot(): void {
		\OCP\Util::$scripts = [];
		\OCP\Util::$styles = [];
		$checks = new Checks($this->settings, $this->orchestrator, new CurlClientService(), new FakeAppManager([]),
			$this->appConfig, new FakeConfig([]), $this->flow);
		$admin = new Admin($this->settings, $checks, $this->status('root', ['root']), new FakeUrlGenerator('https://cloud.example.test/nc'));
		$form = $admin->getForm();
		self::assertSame('/nc/ocs/v2.php/apps/tamebi/api/v1', $form->params['ocsBase']);
		self::assertContains('tamebi/tamebi-admin', \OCP\Util::$scripts);
		self::assertContains('tamebi/tamebi-admin', \OCP\Util::$styles);
		$html = $this->render(['ocsBase' => $form->params['ocsBase'] . '"><script>', 'orchestrator' => ['ok' => false, 'error' => 'down']]);
		self::assertStringContainsString('<div id="tamebi-admin-app" data-ocs-base="/nc/ocs/v2.php/apps/tamebi/api/v1&quot;&gt;&lt;script&gt;"></div>', $html, 'the mount point, its base escaped');
	}

	private function render(array $params): string {
		require_once __DIR__ . '/../AdminPage.php';
		return renderAdminTemplate($params);
	}
}
