<?php

declare(strict_types=1);

namespace OCA\Tamebi\Tests\Unit;

use OCA\Tamebi\Controller\AdminController;
use OCA\Tamebi\Service\AdminStatus;
use OCA\Tamebi\Service\Signer;
use OCA\Tamebi\Tests\Stubs\FakeGroupManager;
use OCA\Tamebi\Tests\Stubs\FakeUser;
use OCA\Tamebi\Tests\Stubs\FakeUserSession;

/**
 * The admin status: signed for an admin only (IGroupManager asked first), never with a user's
 * token, refused by the (fake) orchestrator without the admin signature, and shown read-only
 * and escaped on the settings page.
 */
final class AdminStatusTest extends AppTestCase {
	private function status(string $uid, array $admins): AdminStatus {
		return new AdminStatus($this->orchestrator, new FakeUserSession(new FakeUser($uid)), new FakeGroupManager($admins), $this->logger);
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
		$expected = hash_hmac('sha256', "tamebi-admin-v1\nroot\n" . $h['x-tamebi-ts'] . "\n" . $h['x-tamebi-nonce'], self::SIGNING);
		self::assertSame($expected, $h['x-tamebi-admin-signature']);
	}

	public function testANonAdminIsNeverSigned(): void {
		$groups = new FakeGroupManager(['root']);
		$status = new AdminStatus($this->orchestrator, new FakeUserSession(new FakeUser('alice')), $groups, $this->logger);
		$result = $status->fetch();
		self::assertFalse($result['ok']);
		self::assertSame(403, $result['code']);
		self::assertSame(['alice'], $groups->asked);
		self::assertSame([], $this->orchestratorRequests(), 'nothing was sent for a non-admin');
		$response = (new AdminController($this->request, $status))->status();
		self::assertSame(403, $response->getStatus());
	}

	public function testAUserSignatureAloneIsRefusedUpstream(): void {
		// What a non-admin path could produce at best: the ordinary G1 headers, no admin signature.
		$reply = $this->orchestrator->send('GET', AdminStatus::PATH, 'alice', '', [], 'req-1');
		self::assertSame(403, $reply->status);
	}

	public function testTheSignatureMatchesTheOrchestratorsVector(): void {
		// The same vector as src/auth/identity.rs (admin_signatures_are_separate_from_user_signatures).
		$signer = new Signer('p', str_repeat('s', 32));
		self::assertSame('033e5ec3af54100345548cd39dbb91a66c22e0e207e231e9441b1176b9c36370',
			$signer->adminSignature('admin', 1700000000, '0123456789abcdef0123456789abcdef'));
		$h = $signer->adminHeaders('admin', 1700000000, '0123456789abcdef0123456789abcdef');
		self::assertSame($signer->signature('admin', 1700000000, '0123456789abcdef0123456789abcdef', '', ''), $h['X-Tamebi-Signature']);
		self::assertNotSame($h['X-Tamebi-Signature'], $h['X-Tamebi-Admin-Signature']);
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

	private function render(array $params): string {
		if (!function_exists('p')) {
			eval('function p($s): void { print(htmlspecialchars((string)$s, ENT_QUOTES)); }');
		}
		$_ = $params + ['orchestratorUrl' => 'http://orch', 'mcpUrl' => '', 'checks' => []];
		$l = new class {
			public function t(string $text, array $params = []): string {
				return vsprintf($text, $params);
			}
		};
		ob_start();
		include __DIR__ . '/../../templates/admin.php';
		return (string)ob_get_clean();
	}
}
