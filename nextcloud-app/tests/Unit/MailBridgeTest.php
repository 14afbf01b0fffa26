<?php

declare(strict_types=1);

namespace OCA\Tamebi\Tests\Unit;

use OCA\Tamebi\Controller\MailController;
use OCA\Tamebi\Service\Mail\MailBridge;
use OCA\Tamebi\Service\Mail\MailContracts;
use OCA\Tamebi\Service\RequestBody;
use OCA\Tamebi\Tests\FakeMail;
use OCA\Tamebi\Tests\Stubs\FakeAppManager;
use OCA\Tamebi\Tests\Stubs\FakeRequest;
use OCA\Tamebi\Tests\Stubs\FakeUser;
use OCA\Tamebi\Tests\Stubs\FakeUserSession;
use OCP\AppFramework\OCSController;
use PHPUnit\Framework\TestCase;

/**
 * The mail bridge in-process, over the fake Mail (tests/FakeMail.php) holding the stand-in's
 * fixture. The HTTP contract itself is checked by dev/mail-contract against this bridge under
 * php -S and against the stand-in; here: the controller's security attributes, the one-class rule,
 * and what exactly reaches Mail's contracts.
 */
final class MailBridgeTest extends TestCase {
	private string $state;
	private FakeAppManager $apps;

	protected function setUp(): void {
		$root = dirname(__DIR__, 3);
		$this->state = tempnam(sys_get_temp_dir(), 'tamebi-mail-') ?: throw new \RuntimeException('tempnam');
		$python = "$root/dev/nextcloud-standin/.venv/bin/python";
		exec(escapeshellarg($python) . ' ' . escapeshellarg("$root/dev/mail-contract/export_fixture.py") . ' '
			. escapeshellarg($this->state) . ' alice bob 2>&1', $out, $status);
		$this->assertSame(0, $status, "fixture export failed (needs scripts/install.d/20-standin.sh): " . implode("\n", $out));
		$this->apps = new FakeAppManager(['mail', 'tamebi']);
	}

	protected function tearDown(): void {
		@unlink($this->state);
	}

	private function controller(string $uid, string $body = '', string $contentType = 'application/json'): MailController {
		$file = tempnam(sys_get_temp_dir(), 'tamebi-body-') ?: throw new \RuntimeException('tempnam');
		file_put_contents($file, $body);
		return new MailController(new FakeRequest('req-mail', ['Content-Type' => $contentType]),
			new MailBridge(new MailContracts($this->apps, new FakeMail($this->state))),
			new FakeUserSession(new FakeUser($uid)), new RequestBody($file));
	}

	private function sent(): array {
		return (new FakeMail($this->state))->sent();
	}

	public function testEveryActionAllowsBearerOcsRequestsAndNothingWeaker(): void {
		$class = new \ReflectionClass(MailController::class);
		$this->assertTrue($class->isSubclassOf(OCSController::class), 'only an OCSController lets a Bearer request skip the CSRF token');
		$actions = array_filter($class->getMethods(\ReflectionMethod::IS_PUBLIC),
			static fn (\ReflectionMethod $m) => $m->getDeclaringClass()->getName() === MailController::class && !$m->isConstructor());
		$this->assertCount(6, $actions);
		foreach ($actions as $action) {
			$names = array_map(static fn ($a) => $a->getName(), $action->getAttributes());
			$this->assertSame(['OCP\AppFramework\Http\Attribute\NoAdminRequired'], $names, $action->getName());
		}
	}

	public function testOnlyMailContractsTouchesMail(): void {
		$lib = dirname(__DIR__, 2) . '/lib';
		$touching = [];
		$files = new \RecursiveIteratorIterator(new \RecursiveDirectoryIterator($lib, \FilesystemIterator::SKIP_DOTS));
		foreach ($files as $file) {
			if (!str_ends_with((string)$file, '.php')) {
				continue;
			}
			// Code only: a comment may name Mail's classes (to say what is used and why).
			foreach (token_get_all((string)file_get_contents((string)$file)) as $token) {
				if (is_array($token) && !in_array($token[0], [T_COMMENT, T_DOC_COMMENT], true)
					&& preg_match('/^\\\\?OCA\\\\Mail\\\\/', $token[1]) === 1) {
					$touching[] = substr((string)$file, strlen($lib) + 1);
					break;
				}
			}
		}
		$this->assertSame(['Service/Mail/MailContracts.php'], $touching);
	}

	public function testMailDisabledForTheUserIs501OnEveryRoute(): void {
		$this->apps->enabled = ['tamebi'];
		$c = $this->controller('alice', '{"account_id":1,"to":["bob@example.com"],"subject":"s","body":"b"}');
		foreach ([$c->accounts(), $c->mailboxes('1'), $c->messages(), $c->message('1'), $c->send(), $c->draft()] as $response) {
			$this->assertSame(501, $response->getStatus());
			$this->assertSame(['error' => 'mail_unavailable', 'message' => 'Mail is not set up on this Nextcloud'], $response->getData());
		}
		$this->assertSame([], $this->sent());
	}

	public function testOnlyTheSessionUsersMailExists(): void {
		$bob = $this->controller('bob');
		$this->assertSame([['id' => 2, 'name' => 'Bob Baker', 'email' => 'bob@example.com']], $bob->accounts()->getData()['accounts']);
		foreach ([$bob->message('1'), $bob->mailboxes('1'), $bob->messages(mailbox_id: '1')] as $response) {
			$this->assertSame(404, $response->getStatus());
			$this->assertSame('not_found', $response->getData()['error']);
		}
		$subjects = array_column($bob->messages(limit: '50')->getData()['messages'], 'subject');
		$this->assertSame(['Confidential: your salary review', 'Offsite agenda'], $subjects);
	}

	public function testSendHandsMailExactlyThePlainTextMessage(): void {
		$c = $this->controller('alice', json_encode(['account_id' => 1, 'to' => ['bob@example.com'], 'cc' => ['carla@example.com'],
			'bcc' => ['audit@example.net'], 'subject' => 'Re: Q3 budget', 'body' => "Thursday works.\n", 'in_reply_to' => 1]));
		$response = $c->send();
		$this->assertSame(200, $response->getStatus());
		$this->assertSame(['status' => 'sent'], $response->getData());
		$this->assertSame([[
			'from' => 'Alice Adams <alice@example.com>', 'to' => ['bob@example.com'], 'cc' => ['carla@example.com'],
			'bcc' => ['audit@example.net'], 'subject' => 'Re: Q3 budget', 'body' => "Thursday works.\n", 'html' => false,
			'in_reply_to' => '<budget-q3@example.com>',
		]], $this->sent());
	}

	public function testAnSmtpRefusalReportedThroughTheStatusIs502(): void {
		$c = $this->controller('alice', '{"account_id":1,"to":["x@refused.example.net"],"subject":"s","body":"b"}');
		$response = $c->send();
		$this->assertSame(502, $response->getStatus());
		$this->assertSame('mail_backend', $response->getData()['error']);
		$this->assertSame([], $this->sent());
	}

	public function testNothingIsSentForABodyTheContractRefuses(): void {
		foreach ([
			['{"account_id":1,"to":["bob@example.com"],"subject":"s","body":"b","from":"eve@example.com"}', 'application/json', 400],
			['{"account_id":1,"to":["Bob <bob@example.com>"],"subject":"s","body":"b"}', 'application/json', 400],
			['{"account_id":1,"to":["bob@example.com"],"subject":"s","body":"b"}', 'text/plain', 400],
			['{"account_id":2,"to":["bob@example.com"],"subject":"s","body":"b"}', 'application/json', 404],
			['{"account_id":1,"to":["bob@example.com"],"subject":"s","body":"b","in_reply_to":8}', 'application/json', 404],
		] as [$body, $type, $status]) {
			$this->assertSame($status, $this->controller('alice', $body, $type)->send()->getStatus(), $body);
		}
		$this->assertSame([], $this->sent());
	}

	public function testADraftLandsInDraftsAndIsReadable(): void {
		$saved = $this->controller('alice', '{"account_id":1,"to":["bob@example.com"],"subject":"Later","body":"draft"}')->draft();
		$this->assertSame('saved', $saved->getData()['status']);
		$id = $saved->getData()['draft_id'];
		$this->assertIsInt($id);
		$read = $this->controller('alice')->message((string)$id)->getData();
		$this->assertSame(['Later', 3, ['format' => 'text', 'content' => 'draft']], [$read['subject'], $read['mailbox_id'], $read['body']]);
		$this->assertSame([], $this->sent());
	}
}
