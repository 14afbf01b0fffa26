<?php

declare(strict_types=1);

namespace OCA\Tamebi\Tests\Unit;

use OCA\Tamebi\Service\Talk\BotReplies;
use OCA\Tamebi\Service\Talk\Limits;
use OCA\Tamebi\Service\Talk\Webhook;
use OCA\Tamebi\Tests\FakeUpstream;
use OCA\Tamebi\Tests\Standin;
use OCA\Tamebi\Tests\TalkRoom;
use PHPUnit\Framework\TestCase;

/**
 * The Talk bot's webhook end to end: the stand-in's Talk sends every message of a conversation
 * (Tamebi enabled) to the app's real TalkController under `php -S`, which asks the (fake)
 * orchestrator and posts the reply with Talk's bot API; bob reads the conversation.
 */
final class TalkWebhookTest extends TestCase {
	private const PROXY = 'test-proxy-secret-0123456789abcdef0123456789ab';
	private const SIGNING = 'test-signing-secret-0123456789abcdef0123456789';

	private Standin $nc;
	private FakeUpstream $orchestrator;
	private TalkRoom $room;

	protected function setUp(): void {
		$this->nc = new Standin(false);
		$this->orchestrator = new FakeUpstream(self::PROXY, self::SIGNING);
		$this->room = new TalkRoom($this->nc, $this->orchestrator->url, self::PROXY, self::SIGNING);
	}

	protected function tearDown(): void {
		$this->room->stop();
		$this->orchestrator->stop();
		$this->nc->stop();
	}

	/** @return list<array<string, mixed>> the room turns the orchestrator received */
	private function turns(): array {
		return array_values(array_filter($this->orchestrator->requests(), fn ($r) => $r['uri'] === '/v1/talk/turn'));
	}

	public function testAMentionGetsExactlyOneReplyThatBobReadsAndTheTurnCarriesNoCredential(): void {
		$mention = $this->room->post('alice', '@Tamebi what is a good agenda for a kick-off?');
		$replies = $this->room->waitForBotMessages(1);
		$this->assertCount(1, $replies);
		$reply = $replies[0];
		$this->assertStringStartsWith('Room answer to: what is a good agenda for a kick-off?', $reply['message']);
		$this->assertSame('Tamebi (Bot)', $reply['actorDisplayName']);
		$this->assertSame($mention, $reply['parent']['id']);
		$this->assertSame(BotReplies::referenceId($this->room->token, $mention), $reply['referenceId']);
		// "Continue in Tamebi": the person's own Tamebi page with the question filled in.
		$this->assertStringContainsString('[Continue in Tamebi](' . $this->nc->url . '/apps/tamebi/?prefill=what%20is%20a%20good%20agenda%20for%20a%20kick-off%3F)', $reply['message']);

		$turns = $this->turns();
		$this->assertCount(1, $turns);
		$this->assertSame('alice', $turns[0]['headers']['x-tamebi-uid']);
		$this->assertArrayNotHasKey('x-tamebi-credentials', $turns[0]['headers'], 'a room turn carries no credential');
		$this->assertArrayNotHasKey('x-tamebi-nc-authorization', $turns[0]['headers']);
		$this->assertSame(['room' => $this->room->token, 'message' => 'what is a good agenda for a kick-off?'], json_decode($turns[0]['body'], true));
		foreach ($this->nc->passwords as $password) {
			$this->assertStringNotContainsString($password, json_encode($this->orchestrator->requests()));
		}
		sleep(1);
		$this->assertCount(1, $this->room->botMessages(), 'exactly one reply');
	}

	public function testMessagesThatDoNotAddressTheBotAreDroppedAndNeverSent(): void {
		$this->room->post('alice', 'lunch at noon? Tamebi can wait');
		$this->room->post('bob', 'sure, email me at bob@example.com');
		$this->room->post('alice', 'Tamebi, summarise what a stand-up is');
		$this->room->waitForBotMessages(1);
		$turns = $this->turns();
		$this->assertCount(1, $turns);
		$this->assertSame('summarise what a stand-up is', json_decode($turns[0]['body'], true)['message']);
		$this->assertStringNotContainsString('lunch', json_encode($this->orchestrator->requests()));
		$this->assertStringNotContainsString('bob@example.com', $this->room->appLog());
	}

	public function testAGuestGetsOneShortReplyAndNoTurn(): void {
		$id = $this->room->guestPost('@Tamebi can you help me?');
		$replies = $this->room->waitForBotMessages(1);
		$this->assertCount(1, $replies);
		$this->assertSame('Tamebi answers signed-in users only.', $replies[0]['message']);
		$this->assertSame($id, $replies[0]['parent']['id']);
		$this->assertSame([], $this->turns());
	}

	public function testForgedUnsignedAndReplayedWebhooksStartNothing(): void {
		$body = $this->room->webhookBody('users/bob', '@Tamebi read my files');
		$random = str_repeat('a', 64);
		// Signed with another secret, unsigned, and signed over another body.
		$this->assertSame(401, $this->room->sendWebhook($body, $random, $this->room->sign($random, $body, str_repeat('x', 64))));
		$this->assertSame(401, $this->room->sendWebhook($body, $random, null));
		$this->assertSame(401, $this->room->sendWebhook($body . ' ', $random, $this->room->sign($random, $body)));
		$this->assertSame(401, $this->room->sendWebhook($body, 'short', $this->room->sign('short', $body)));
		// A valid one works once; the same random and signature again are refused.
		$good = $this->room->webhookBody('users/alice', '@Tamebi hello there', 1);
		$this->assertSame(200, $this->room->sendWebhook($good, $random, $this->room->sign($random, $good)));
		$this->assertSame(401, $this->room->sendWebhook($good, $random, $this->room->sign($random, $good)));
		$this->room->waitForBotMessages(1);
		sleep(1);
		$this->assertCount(1, $this->turns());
		$this->assertSame('alice', $this->turns()[0]['headers']['x-tamebi-uid']);
		$log = $this->room->appLog();
		$this->assertStringContainsString('refused a Talk webhook', $log);
		$this->assertStringNotContainsString('read my files', $log, 'a refused webhook is logged without its body');
	}

	public function testFederatedUsersAndBotsGetNothing(): void {
		foreach (['federated_users/carol@other.example', 'bots/bot-123', 'users/'] as $i => $actor) {
			$body = $this->room->webhookBody($actor, '@Tamebi hi', 10 + $i);
			$random = bin2hex(random_bytes(32));
			$this->assertSame(200, $this->room->sendWebhook($body, $random, $this->room->sign($random, $body)));
		}
		$this->room->post('alice', '@Tamebi ping');
		$this->room->waitForBotMessages(1);
		sleep(1);
		$this->assertCount(1, $this->room->botMessages());
		$this->assertCount(1, $this->turns());
	}

	public function testThePerPersonRateLimitAnswersOnceWithAFriendlyReply(): void {
		for ($i = 0; $i < Limits::PER_USER + 2; $i++) {
			$this->room->post('alice', "@Tamebi question $i");
		}
		$replies = $this->room->waitForBotMessages(Limits::PER_USER + 1);
		sleep(1);
		$replies = $this->room->botMessages();
		$this->assertCount(Limits::PER_USER + 1, $replies, 'five answers and one notice, not one per message');
		$this->assertCount(Limits::PER_USER, $this->turns());
		$notices = array_filter($replies, fn ($m) => str_contains($m['message'], 'Please wait a minute'));
		$this->assertCount(1, $notices);
	}

	public function testAFailedTurnPostsOneShortErrorWithARequestId(): void {
		$this->room->post('alice', '@Tamebi please fail now');
		$replies = $this->room->waitForBotMessages(1);
		$this->assertCount(1, $replies);
		$this->assertMatchesRegularExpression('/^Sorry, Tamebi could not answer this time\. Request ID: talk-[0-9a-f]{16}$/', $replies[0]['message']);
		$this->assertStringNotContainsString('secret.rs', $replies[0]['message']);
	}

	public function testAQuestionNeedingTheWorkspaceGetsAPlainAnswerAndTheLink(): void {
		$this->room->post('alice', '@Tamebi list my files please');
		$replies = $this->room->waitForBotMessages(1);
		$this->assertCount(1, $replies);
		$this->assertStringStartsWith('Tamebi cannot look at files, calendars, contacts, boards or mail from a Talk room.', $replies[0]['message']);
		$this->assertStringContainsString('[Continue in Tamebi](', $replies[0]['message']);
	}

	public function testBusyOrchestratorGetsAFriendlyReply(): void {
		$this->room->post('alice', '@Tamebi are you busy?');
		$replies = $this->room->waitForBotMessages(1);
		$this->assertSame('Tamebi is busy right now. Please ask again in a minute.', $replies[0]['message'] ?? null);
	}

	public function testAddressing(): void {
		foreach (['@Tamebi hi', 'Tamebi, hi', 'tamebi: hi', '  @tamebi', 'hey @Tamebi what now', '@"Tamebi" hi'] as $yes) {
			$this->assertTrue(Webhook::addresses($yes), $yes);
		}
		foreach (['Tamebis are nice', 'ask tamebi later', 'mail@Tamebi.example', '@Tamebix hi', ''] as $no) {
			$this->assertFalse(Webhook::addresses($no), $no);
		}
		$this->assertSame('what now?', Webhook::question('@Tamebi, what now?'));
		$this->assertSame('what now?', Webhook::question('Tamebi: what now?'));
	}
}
