<?php

declare(strict_types=1);

namespace OCA\Tamebi\Tests\Unit;

use OCA\Tamebi\Controller\MailController;
use OCA\Tamebi\Http\OcsAnswers;
use OCA\Tamebi\Service\Mail\MailBridge;
use OCA\Tamebi\Service\Mail\MailContracts;
use OCA\Tamebi\Service\Mail\MailError;
use OCA\Tamebi\Service\RequestBody;
use OCA\Tamebi\Tests\FakeMail;
use OCA\Tamebi\Tests\Stubs\FakeAppManager;
use OCA\Tamebi\Tests\Stubs\FakeGroupManager;
use OCA\Tamebi\Tests\Stubs\FakeRequest;
use OCA\Tamebi\Tests\Stubs\FakeUser;
use OCA\Tamebi\Tests\Stubs\FakeUserSession;
use OCA\Tamebi\Tests\Stubs\RecordingLogger;
use OCA\Mail\Account;
use OCA\Mail\Db\LocalMessage;
use OCA\Mail\Exception\SentMailboxNotSetException;
use OCA\Mail\Exception\ServiceException;
use OCA\Mail\Service\AccountService;
use OCA\Mail\Service\OutboxService;
use OCP\AppFramework\OCSController;
use PHPUnit\Framework\TestCase;
use Psr\Container\ContainerInterface;

/**
 * The mail bridge in-process, over the fake Mail (tests/FakeMail.php) holding the stand-in's
 * fixture. The HTTP contract itself is checked by dev/mail-contract against this bridge under
 * php -S and against the stand-in; here: the controller's security attributes, the one-class rule,
 * and what exactly reaches Mail's contracts.
 */
final class MailBridgeTest extends TestCase {
	private string $state;
	private FakeAppManager $apps;
	private RecordingLogger $logger;
	/** @var array<string, object> Mail services replaced for one test */
	private array $overrides = [];

	protected function setUp(): void {
		$root = dirname(__DIR__, 3);
		$this->state = tempnam(sys_get_temp_dir(), 'tamebi-mail-') ?: throw new \RuntimeException('tempnam');
		$python = "$root/dev/nextcloud-standin/.venv/bin/python";
		exec(escapeshellarg($python) . ' ' . escapeshellarg("$root/dev/mail-contract/export_fixture.py") . ' '
			. escapeshellarg($this->state) . ' alice bob 2>&1', $out, $status);
		$this->assertSame(0, $status, "fixture export failed (needs scripts/install.d/20-standin.sh): " . implode("\n", $out));
		$this->apps = new FakeAppManager(['mail', 'tamebi']);
		$this->logger = new RecordingLogger();
	}

	protected function tearDown(): void {
		@unlink($this->state);
	}

	private function controller(string $uid, string $body = '', string $contentType = 'application/json'): MailController {
		$file = tempnam(sys_get_temp_dir(), 'tamebi-body-') ?: throw new \RuntimeException('tempnam');
		file_put_contents($file, $body);
		$mail = new OverridingContainer(new FakeMail($this->state), $this->overrides);
		return new MailController(new FakeRequest('req-mail', ['Content-Type' => $contentType]),
			new MailBridge(new MailContracts($this->apps, $mail)),
			new OcsAnswers(new FakeUserSession(new FakeUser($uid)), new FakeGroupManager([]), $this->logger),
			new RequestBody($file));
	}

	private function sent(): array {
		return (new FakeMail($this->state))->sent();
	}

	private function outbox(): array {
		return (new FakeMail($this->state))->outbox();
	}

	/** @return list<string> subjects in one of alice's mailboxes */
	private function subjectsIn(string $mailboxId): array {
		return array_column($this->controller('alice')->messages(mailbox_id: $mailboxId, limit: '50')->getData()['messages'], 'subject');
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

	public function testSendingRunsMailsSendChainSentCopyAndAnsweredFlag(): void {
		$this->assertFalse($this->controller('alice')->message('1')->getData()['answered']);
		$c = $this->controller('alice', json_encode(['account_id' => 1, 'to' => ['bob@example.com'], 'subject' => 'Re: Q3 budget',
			'body' => "Thursday works.\n", 'in_reply_to' => 1]));
		$this->assertSame(['status' => 'sent'], $c->send()->getData());
		// CopySentMessageHandler: the mail is in alice's Sent mailbox (id 2), as it was sent.
		$this->assertSame(['Re: Q3 budget', 'Offsite agenda'], $this->subjectsIn('2'));
		$copy = $this->controller('alice')->messages(mailbox_id: '2', limit: '1')->getData()['messages'][0];
		$read = $this->controller('alice')->message((string)$copy['id'])->getData();
		$this->assertSame(['<budget-q3@example.com>', ['format' => 'text', 'content' => "Thursday works.\n"]], [$read['in_reply_to'], $read['body']]);
		// FlagRepliedMessageHandler: the original is \Answered; Chain: the outbox entry is gone.
		$this->assertTrue($this->controller('alice')->message('1')->getData()['answered']);
		$this->assertSame([], $this->outbox());
	}

	public function testAnSmtpRefusalReportedThroughTheStatusIs502(): void {
		$c = $this->controller('alice', '{"account_id":1,"to":["x@refused.example.net"],"subject":"s","body":"b"}');
		$response = $c->send();
		$this->assertSame(502, $response->getStatus());
		$this->assertSame('mail_backend', $response->getData()['error']);
		$this->assertSame([], $this->sent());
		$this->assertSame([], $this->outbox(), 'a failed send leaves no outbox entry for Mail to show or retry');
		$this->assertSame(['Offsite agenda'], $this->subjectsIn('2'));
	}

	public function testWithoutASentMailboxMailSendsNothing(): void {
		$state = json_decode((string)file_get_contents($this->state), true);
		$state['mailboxes'][1]['special_use'] = []; // alice's "Sent" is no longer her Sent mailbox
		file_put_contents($this->state, json_encode($state));
		$response = $this->controller('alice', '{"account_id":1,"to":["bob@example.com"],"subject":"s","body":"b"}')->send();
		// A setting only the person can change: not a passing backend failure, and says what to do.
		$this->assertSame(409, $response->getStatus());
		$this->assertSame(['error' => 'no_sent_mailbox', 'message' => MailError::NO_SENT_MAILBOX_MESSAGE], $response->getData());
		$this->assertStringContainsString('Default folders', $response->getData()['message']);
		$this->assertSame([[], []], [$this->sent(), $this->outbox()]);
	}

	/** Mail releases whose SentMailboxHandler throws instead of setting the status: same answer. */
	public function testASentMailboxNotSetExceptionIsNoSentMailboxNotAnUnknownOutcome(): void {
		$this->sendChainThrows(new SentMailboxNotSetException());
		$response = $this->controller('alice', '{"account_id":1,"to":["bob@example.com"],"subject":"s","body":"b"}')->send();
		$this->assertSame(409, $response->getStatus());
		$this->assertSame(['error' => 'no_sent_mailbox', 'message' => MailError::NO_SENT_MAILBOX_MESSAGE], $response->getData());
		$this->assertSame([[], []], [$this->sent(), $this->outbox()]);
	}

	/** Mail's saveDraft refuses with a bare ClientException: a setting to make, not a passing failure. */
	public function testWithoutADraftsMailboxNoDraftIsSavedAndTheAnswerSaysWhatToSet(): void {
		$state = json_decode((string)file_get_contents($this->state), true);
		foreach ($state['mailboxes'] as $i => $box) {
			$state['mailboxes'][$i]['special_use'] = array_values(array_diff($box['special_use'], ['drafts']));
		}
		file_put_contents($this->state, json_encode($state));
		$before = count($state['messages']);
		foreach ([null, 1] as $inReplyTo) {
			$response = $this->controller('alice', json_encode(['account_id' => 1, 'to' => ['bob@example.com'], 'subject' => 's',
				'body' => 'b', 'in_reply_to' => $inReplyTo]))->draft();
			$this->assertSame(409, $response->getStatus(), json_encode($response->getData()));
			$this->assertSame(['error' => 'no_drafts_mailbox', 'message' => MailError::NO_DRAFTS_MAILBOX_MESSAGE], $response->getData());
		}
		$after = json_decode((string)file_get_contents($this->state), true);
		$this->assertCount($before, $after['messages']);
	}

	public function testMailsUnclearSentStateIsAnUnknownOutcomeNotAFailure(): void {
		$response = $this->controller('alice', '{"account_id":1,"to":["x@unclear.example.net"],"subject":"s","body":"b"}')->send();
		$this->assertSame(502, $response->getStatus());
		$this->assertSame(['error' => 'send_outcome_unknown', 'message' => MailError::SEND_UNKNOWN_MESSAGE], $response->getData());
		$this->assertCount(1, $this->sent(), 'in this scenario the mail did go out');
		// Mail's own record of the unclear state stays: Mail refuses to send that entry again.
		$this->assertCount(1, $this->outbox());
	}

	public function testADatabaseFailureWhilePreparingIsAPlainFailureNotAnUnknownOutcome(): void {
		$fake = new FakeMail($this->state);
		$this->overrides[OutboxService::class] = new class($fake) extends OutboxService {
			public function __construct(private FakeMail $mail) {
			}
			public function saveMessage(Account $account, LocalMessage $message, array $to, array $cc, array $bcc, array $attachments = []): LocalMessage {
				// LocalMessageMapper::saveWithRecipients rethrows whatever the database threw.
				throw new \RuntimeException('SQLSTATE[HY000]: db.internal gone away');
			}
			public function sendMessage(LocalMessage $message, Account $account): LocalMessage {
				throw new \LogicException('nothing may be sent after a failed save');
			}
			public function deleteMessage(string $userId, LocalMessage $message): void {
				$this->mail->outboxDelete($userId, $message);
			}
		};
		$response = $this->controller('alice', '{"account_id":1,"to":["bob@example.com"],"subject":"s","body":"b"}')->send();
		$this->assertSame([502, 'mail_backend'], [$response->getStatus(), $response->getData()['error']]);
		$this->assertStringNotContainsString('db.internal', json_encode($response->getData()));
		$this->assertSame([[], []], [$this->sent(), $this->outbox()]);
	}

	/** Mail's outbox as FakeMail has it, except that its send chain throws `$thrown`. */
	private function sendChainThrows(\Throwable $thrown): void {
		$this->overrides[OutboxService::class] = new class(new FakeMail($this->state), $thrown) extends OutboxService {
			public function __construct(private FakeMail $mail, private \Throwable $thrown) {
			}
			public function saveMessage(Account $account, LocalMessage $message, array $to, array $cc, array $bcc, array $attachments = []): LocalMessage {
				return $this->mail->outboxSave($account, $message, $to, $cc, $bcc);
			}
			public function sendMessage(LocalMessage $message, Account $account): LocalMessage {
				throw $this->thrown;
			}
			public function deleteMessage(string $userId, LocalMessage $message): void {
				$this->mail->outboxDelete($userId, $message);
			}
		};
	}

	public function testAnExceptionFromInsideTheSendChainIsAnUnknownOutcome(): void {
		$this->sendChainThrows(new ServiceException('smtp.internal.example:587 dropped the connection'));
		$response = $this->controller('alice', '{"account_id":1,"to":["bob@example.com"],"subject":"s","body":"b"}')->send();
		$this->assertSame([502, 'send_outcome_unknown'], [$response->getStatus(), $response->getData()['error']]);
		$this->assertStringNotContainsString('smtp.internal', json_encode($response->getData()));
		$this->assertStringContainsString('send_outcome_unknown', $this->logger->text());
		$this->assertSame('smtp.internal.example:587 dropped the connection', $this->logger->exceptions[0]->getMessage());
		$this->assertSame([], $this->outbox());
	}

	/** Item: whatever escapes from Mail is the contract's error shape, with nothing of its text. */
	public function testUnexpectedFailuresAreTheContractsShapeAndOnlyLogged(): void {
		foreach ([
			[new ServiceException('imap.secret.example: LOGIN failed for alice'), 502, 'mail_backend'],
			[new \Horde_Imap_Client_Exception('imap.secret.example: connection reset'), 502, 'mail_backend'],
			[new \TypeError('Argument #1 ($secret) must be of type int'), 500, 'internal_error'],
			[new \RuntimeException('secret internals'), 500, 'internal_error'],
		] as [$thrown, $status, $code]) {
			$this->logger = new RecordingLogger();
			$this->overrides[AccountService::class] = new class($thrown) extends AccountService {
				public function __construct(private \Throwable $thrown) {
				}
				public function findByUserId(string $currentUserId): array {
					throw $this->thrown;
				}
			};
			foreach (['accounts' => [], 'messages' => [], 'send' => []] as $action => $args) {
				$c = $this->controller('alice', '{"account_id":1,"to":["bob@example.com"],"subject":"s","body":"b"}');
				$response = $c->$action(...$args);
				$this->assertSame($status, $response->getStatus(), get_class($thrown) . " on $action");
				$this->assertSame($code, $response->getData()['error']);
				$this->assertSame(['error', 'message'], array_keys($response->getData()));
				$this->assertStringNotContainsString('secret', json_encode($response->getData()));
			}
			$this->assertSame(get_class($thrown), get_class($this->logger->exceptions[0]), 'the cause is logged');
		}
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

	public function testAReplyDraftKeepsItsThreadInTheImapMessage(): void {
		$saved = $this->controller('alice', json_encode(['account_id' => 1, 'to' => ['bob@example.com'], 'cc' => ['carla@example.com'],
			'subject' => 'Re: Q3 budget – Zahlen', 'body' => "Später.\n", 'in_reply_to' => 1]))->draft();
		$this->assertSame(200, $saved->getStatus(), json_encode($saved->getData()));
		$read = $this->controller('alice')->message((string)$saved->getData()['draft_id'])->getData();
		$this->assertSame(['Re: Q3 budget – Zahlen', 3, '<budget-q3@example.com>', ['format' => 'text', 'content' => "Später.\n"]],
			[$read['subject'], $read['mailbox_id'], $read['in_reply_to'], $read['body']]);
		$this->assertSame([['label' => 'Alice Adams', 'email' => 'alice@example.com']], $read['from']);
		$this->assertSame([['label' => null, 'email' => 'carla@example.com']], $read['cc']);
		$state = json_decode((string)file_get_contents($this->state), true);
		$row = end($state['messages']);
		$this->assertSame(['\\draft'], $row['flags'], 'stored with \\Draft, as Mail stores drafts');
		$this->assertSame([[], []], [$this->sent(), $this->outbox()]);
		$this->assertFalse($this->controller('alice')->message('1')->getData()['answered'], 'a draft answers nothing yet');
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

/** FakeMail's services, some replaced by a test. */
final class OverridingContainer implements ContainerInterface {
	/** @param array<string, object> $overrides */
	public function __construct(private FakeMail $mail, private array $overrides) {
	}

	public function get(string $id) {
		return $this->overrides[$id] ?? $this->mail->get($id);
	}

	public function has(string $id): bool {
		return isset($this->overrides[$id]) || $this->mail->has($id);
	}
}
