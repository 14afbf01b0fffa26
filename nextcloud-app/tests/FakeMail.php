<?php

declare(strict_types=1);

namespace OCA\Tamebi\Tests;

use Horde_Imap_Client_Socket;
use OCA\Mail\Account;
use OCA\Mail\Address;
use OCA\Mail\AddressList;
use OCA\Mail\Attachment;
use OCA\Mail\Contracts\IMailManager;
use OCA\Mail\Contracts\IMailSearch;
use OCA\Mail\Contracts\IMailTransmission;
use OCA\Mail\Db\LocalMessage;
use OCA\Mail\Db\MailAccount;
use OCA\Mail\Db\Mailbox;
use OCA\Mail\Db\Message;
use OCA\Mail\Db\Recipient;
use OCA\Mail\Db\Tag;
use OCA\Mail\Exception\ClientException;
use OCA\Mail\IMAP\IMAPClientFactory;
use OCA\Mail\IMAP\MessageMapper as ImapMessageMapper;
use OCA\Mail\Model\IMAPMessage;
use OCA\Mail\Model\NewMessageData;
use OCA\Mail\Exception\ServiceException;
use OCA\Mail\Service\AccountService;
use OCA\Mail\Service\OutboxService;
use OCA\Mail\Service\Quota;
use OCA\Mail\Service\Search\SearchQuery;
use OCP\AppFramework\Db\DoesNotExistException;
use OCP\IUser;
use Psr\Container\ContainerInterface;

/**
 * A fake Nextcloud Mail behind its contract interfaces, for the bridge's tests and for the bridge
 * served by `php -S` (tests/mail-bridge-server.php) that the shared contract suite calls.
 *
 * Its mail is a JSON state file: the stand-in's fixture exported by dev/mail-contract/
 * export_fixture.py (same accounts, mailboxes, messages and ids), so both implementations answer
 * the same questions about the same mail. Each request reloads it (php -S runs each request
 * afresh) and a change is written back under an exclusive lock.
 *
 * Behaviour mirrors Mail where the bridge depends on it: getMailbox/getMessage are scoped to the
 * uid (another user's id: ClientException / DoesNotExistException), findMessages takes Mail's
 * filter syntax, saveDraft returns [account, drafts mailbox, new uid]. Sending is Mail 5.x's
 * outbox (FakeOutboxService below): saveMessage stores an outbox entry, sendMessage runs the send
 * chain's steps in Mail's order — no Sent mailbox: STATUS_NO_SENT_MAILBOX and nothing sent; the
 * SMTP step (a recipient at refused.example.net is refused: STATUS_SMPT_SEND_FAIL, nothing sent;
 * one at unclear.example.net goes out but the SMTP answer is lost: STATUS_ERROR, Mail's "unclear
 * sent state", like the stand-in's SMTP sink); then the copy into Sent, the \Answered flag on
 * the mail replied to (not in Sent or Drafts), STATUS_PROCESSED and the outbox entry removed.
 * A message that was not saved first cannot be sent (Mail's chain updates or deletes its row).
 * What the bridge never calls throws LogicException.
 */
final class FakeMail implements IMailManager, IMailSearch, IMailTransmission, ContainerInterface {
	public const REFUSED_DOMAIN = 'refused.example.net';
	public const UNCLEAR_DOMAIN = 'unclear.example.net';

	private array $state;

	public function __construct(private string $stateFile) {
		$this->state = json_decode((string)file_get_contents($stateFile), true, 512, JSON_THROW_ON_ERROR);
	}

	// ---- the container: Mail's services resolve to this fake -----------------------------------

	public function get(string $id) {
		return match ($id) {
			IMailManager::class, IMailSearch::class, IMailTransmission::class => $this,
			AccountService::class => new FakeAccountService($this),
			OutboxService::class => new FakeOutboxService($this),
			ImapMessageMapper::class => new FakeImapMessageMapper($this),
			IMAPClientFactory::class => new IMAPClientFactory(),
			default => throw new \LogicException("FakeMail container has no $id"),
		};
	}

	public function has(string $id): bool {
		return in_array($id, [IMailManager::class, IMailSearch::class, IMailTransmission::class, AccountService::class,
			OutboxService::class, ImapMessageMapper::class, IMAPClientFactory::class], true);
	}

	// ---- what tests read -------------------------------------------------------------------

	/** @return list<array<string, mixed>> what "went out over SMTP", oldest first */
	public function sent(): array {
		return $this->state['sent'];
	}

	/** @return list<Account> */
	public function accountsOf(string $uid): array {
		$out = [];
		foreach ($this->state['accounts'] as $a) {
			if ($a['uid'] === $uid) {
				$mailAccount = new MailAccount($a['id'], $a['uid'], $a['name'], $a['email']);
				$mailAccount->setSentMailboxId($this->specialMailbox($a['id'], 'sent')['id'] ?? null);
				$mailAccount->setDraftsMailboxId($this->specialMailbox($a['id'], 'drafts')['id'] ?? null);
				$out[] = new Account($mailAccount);
			}
		}
		return $out;
	}

	// ---- IMailManager (the part the bridge uses) ---------------------------------------------

	public function getMailbox(string $uid, int $id): Mailbox {
		foreach ($this->state['mailboxes'] as $m) {
			if ($m['id'] === $id && $this->ownerOfAccount($m['account_id']) === $uid) {
				return $this->mailboxObject($m);
			}
		}
		throw new ClientException("Mailbox $id does not exist");
	}

	public function getMailboxes(Account $account): array {
		return array_values(array_map(fn (array $m) => $this->mailboxObject($m),
			array_filter($this->state['mailboxes'], static fn (array $m) => $m['account_id'] === $account->getId())));
	}

	public function getMessageIdForUid(Mailbox $mailbox, $uid): ?int {
		foreach ($this->state['messages'] as $m) {
			if ($m['mailbox_id'] === $mailbox->getId() && $m['uid'] === $uid) {
				return $m['id'];
			}
		}
		return null;
	}

	public function getMessage(string $uid, int $id): Message {
		$m = $this->messageRow($id);
		if ($m === null || $this->ownerOfMailbox($m['mailbox_id']) !== $uid) {
			throw new DoesNotExistException("message $id not found");
		}
		return $this->messageObject($m);
	}

	public function getImapMessage(Horde_Imap_Client_Socket $client, Account $account, Mailbox $mailbox, int $uid, bool $loadBody = false): IMAPMessage {
		foreach ($this->state['messages'] as $m) {
			if ($m['mailbox_id'] === $mailbox->getId() && $m['uid'] === $uid) {
				return new IMAPMessage($m['plain'], $m['html'], $m['attachments']);
			}
		}
		throw new \OCA\Mail\Exception\ServiceException("no IMAP message $uid");
	}

	public function createMailbox(Account $account, string $name): Mailbox {
		throw new \LogicException(__FUNCTION__);
	}

	public function getSource(Horde_Imap_Client_Socket $client, Account $account, string $mailbox, int $uid): ?string {
		throw new \LogicException(__FUNCTION__);
	}

	public function getThread(Account $account, string $threadRootId): array {
		throw new \LogicException(__FUNCTION__);
	}

	public function moveMessage(Account $sourceAccount, string $sourceFolderId, int $uid, Account $destinationAccount, string $destFolderId): ?int {
		throw new \LogicException(__FUNCTION__);
	}

	public function deleteMessage(Account $account, string $mailboxId, int $messageUid): void {
		throw new \LogicException(__FUNCTION__);
	}

	public function deleteMessageWithClient(Account $account, Mailbox $mailbox, int $messageUid, Horde_Imap_Client_Socket $client): void {
		throw new \LogicException(__FUNCTION__);
	}

	public function markFolderAsRead(Account $account, Mailbox $mailbox): void {
		throw new \LogicException(__FUNCTION__);
	}

	public function flagMessage(Account $account, string $mailbox, int $uid, string $flag, bool $value): void {
		throw new \LogicException(__FUNCTION__);
	}

	public function tagMessage(Account $account, string $mailbox, Message $message, Tag $tag, bool $value): void {
		throw new \LogicException(__FUNCTION__);
	}

	public function getQuota(Account $account): ?Quota {
		throw new \LogicException(__FUNCTION__);
	}

	public function renameMailbox(Account $account, Mailbox $mailbox, string $name): Mailbox {
		throw new \LogicException(__FUNCTION__);
	}

	public function deleteMailbox(Account $account, Mailbox $mailbox): void {
		throw new \LogicException(__FUNCTION__);
	}

	public function clearMailbox(Account $account, Mailbox $mailbox): void {
		throw new \LogicException(__FUNCTION__);
	}

	public function updateSubscription(Account $account, Mailbox $mailbox, bool $subscribed): Mailbox {
		throw new \LogicException(__FUNCTION__);
	}

	public function enableMailboxBackgroundSync(Mailbox $mailbox, bool $syncInBackground): Mailbox {
		throw new \LogicException(__FUNCTION__);
	}

	public function getMailAttachments(Account $account, Mailbox $mailbox, Message $message) : array {
		throw new \LogicException(__FUNCTION__);
	}

	public function getMailAttachment(Account $account, Mailbox $mailbox, Message $message, string $attachmentId): Attachment {
		throw new \LogicException(__FUNCTION__);
	}

	public function getTagByImapLabel(string $imapLabel, string $userId): Tag {
		throw new \LogicException(__FUNCTION__);
	}

	public function isPermflagsEnabled(Horde_Imap_Client_Socket $client, Account $account, string $mailbox): bool {
		throw new \LogicException(__FUNCTION__);
	}

	public function createTag(string $displayName, string $color, string $userId): Tag {
		throw new \LogicException(__FUNCTION__);
	}

	public function updateTag(int $id, string $displayName, string $color, string $userId): Tag {
		throw new \LogicException(__FUNCTION__);
	}

	public function deleteTag(int $id, string $userId, array $accounts): Tag {
		throw new \LogicException(__FUNCTION__);
	}

	public function deleteTagForAccount(int $id, string $userId, Tag $tag, Account $account): void {
		throw new \LogicException(__FUNCTION__);
	}

	public function moveThread(Account $srcAccount, Mailbox $srcMailbox, Account $dstAccount, Mailbox $dstMailbox, string $threadRootId): array {
		throw new \LogicException(__FUNCTION__);
	}

	public function deleteThread(Account $account, Mailbox $mailbox, string $threadRootId): void {
		throw new \LogicException(__FUNCTION__);
	}

	public function getByMessageId(Account $account, string $messageId): array {
		throw new \LogicException(__FUNCTION__);
	}

	// ---- IMailSearch ---------------------------------------------------------------------

	public function findMessage(Account $account, Mailbox $mailbox, Message $message): Message {
		throw new \LogicException(__FUNCTION__);
	}

	/** Mail's filter syntax: words (subject or body), from:, to: (To or Cc), is:unread/read, start:/end: (unix). */
	public function findMessages(Account $account, Mailbox $mailbox, string $sortOrder, ?string $filter, ?int $cursor,
		?int $limit, ?string $userId, ?string $view): array {
		$hits = [];
		foreach ($this->state['messages'] as $m) {
			if ($m['mailbox_id'] === $mailbox->getId() && $this->matches($m, (string)$filter)) {
				$hits[] = $m;
			}
		}
		usort($hits, static fn (array $a, array $b): int => $sortOrder === self::ORDER_NEWEST_FIRST
			? [$b['sent_at'], $b['id']] <=> [$a['sent_at'], $a['id']]
			: [$a['sent_at'], $a['id']] <=> [$b['sent_at'], $b['id']]);
		return array_map(fn (array $m) => $this->messageObject($m), array_slice($hits, 0, $limit ?? 20));
	}

	public function findMessagesGlobally(IUser $user, SearchQuery $query, ?int $limit): array {
		throw new \LogicException(__FUNCTION__);
	}

	// ---- IMailTransmission -----------------------------------------------------------------

	/** Only the SMTP step of Mail's send chain: the bridge must go through the outbox instead. */
	public function sendMessage(Account $account, LocalMessage $localMessage): void {
		throw new \LogicException(__FUNCTION__ . ': send through OutboxService, as Mail\'s UI does');
	}

	public function saveLocalDraft(Account $account, LocalMessage $message): void {
		throw new \LogicException(__FUNCTION__);
	}

	public function saveDraft(NewMessageData $message, ?Message $previousDraft = null): array {
		$account = $message->getAccount();
		$drafts = $this->specialMailbox($account->getId(), 'drafts');
		if ($drafts === null) {
			throw new ClientException('No drafts mailbox configured');
		}
		$id = $this->state['next_message_id']++;
		$uid = 1000 + $id;
		$list = static fn (AddressList $l): array => array_map(static fn (Address $a) => ['label' => $a->getLabel() === $a->getEmail() ? null : $a->getLabel(), 'email' => $a->getEmail()], iterator_to_array($l->iterate(), false));
		$this->state['messages'][] = [
			'id' => $id, 'uid' => $uid, 'mailbox_id' => $drafts['id'], 'message_id' => '<draft-' . $id . '@fake.invalid>',
			'subject' => $message->getSubject(), 'sent_at' => time(), 'seen' => true,
			'from' => [['label' => $account->getName(), 'email' => $account->getEMailAddress()]],
			'to' => $list($message->getTo()), 'cc' => $list($message->getCc()), 'bcc' => $list($message->getBcc()),
			'plain' => $message->getBody(), 'html' => null, 'attachments' => [], 'answered' => false, 'in_reply_to' => null,
		];
		$this->save();
		return [$account, $this->mailboxObject($drafts), $uid];
	}

	/**
	 * IMAP APPEND of a raw RFC 5322 message (IMAP\MessageMapper::save), as the mail server would
	 * store it; Mail's cache learns it at once here. Returns the new UID.
	 */
	public function imapAppend(Mailbox $mailbox, string $raw, array $flags): int {
		[$head, $body] = preg_split("/\r?\n\r?\n/", $raw, 2) + ['', ''];
		$headers = iconv_mime_decode_headers($head, ICONV_MIME_DECODE_CONTINUE_ON_ERROR, 'UTF-8');
		if ($headers === false || !isset($headers['From'], $headers['Subject'], $headers['Message-ID'], $headers['Date'])) {
			throw new \Horde_Imap_Client_Exception('not a message a mail server would take');
		}
		$list = static function (?string $value): array {
			$out = [];
			foreach (array_filter(array_map('trim', explode(',', (string)$value))) as $a) {
				$out[] = preg_match('/^(.*)<([^>]+)>$/', $a, $m) === 1 ? ['label' => trim($m[1]), 'email' => $m[2]] : ['label' => null, 'email' => $a];
			}
			return $out;
		};
		$plain = stripos((string)($headers['Content-Transfer-Encoding'] ?? ''), 'base64') !== false ? base64_decode($body, true) : $body;
		$id = $this->state['next_message_id']++;
		$this->state['messages'][] = [
			'id' => $id, 'uid' => 1000 + $id, 'mailbox_id' => $mailbox->getId(), 'message_id' => $headers['Message-ID'],
			'subject' => $headers['Subject'], 'sent_at' => (int)strtotime($headers['Date']),
			'seen' => true, // MessageMapper::save adds \Seen
			'from' => $list($headers['From']), 'to' => $list($headers['To'] ?? null), 'cc' => $list($headers['Cc'] ?? null),
			'bcc' => $list($headers['Bcc'] ?? null), 'plain' => (string)$plain, 'html' => null, 'attachments' => [],
			'answered' => false, 'in_reply_to' => $headers['In-Reply-To'] ?? null, 'flags' => $flags,
		];
		$this->save();
		return 1000 + $id;
	}

	// ---- Mail 5.x's outbox and send chain (FakeOutboxService calls these) --------------------

	/** OutboxService::saveMessage: the outbox entry with its recipients, as LocalMessageMapper stores it. */
	public function outboxSave(Account $account, LocalMessage $message, array $to, array $cc, array $bcc): LocalMessage {
		if ($message->getId() !== null || $message->getType() !== LocalMessage::TYPE_OUTGOING || $message->getAccountId() !== $account->getId()) {
			throw new \LogicException('saveMessage takes a new outgoing message of this account');
		}
		$recipients = [];
		foreach ([Recipient::TYPE_TO => $to, Recipient::TYPE_CC => $cc, Recipient::TYPE_BCC => $bcc] as $type => $list) {
			foreach ($list as $r) {
				// Mail's convertToRecipient reads $r['email'] and $r['label'] ?? $r['email'].
				if (!is_array($r) || !is_string($r['email'] ?? null) || (isset($r['label']) && !is_string($r['label']))) {
					throw new \TypeError('a recipient is array{email: string, label?: string}');
				}
				$recipient = new Recipient();
				$recipient->setType($type);
				$recipient->setLabel($r['label'] ?? $r['email']);
				$recipient->setEmail($r['email']);
				$recipients[] = $recipient;
			}
		}
		$id = $this->state['next_local_id'] = ($this->state['next_local_id'] ?? 0) + 1;
		$message->setId($id);
		$message->setRecipients($recipients);
		$message->setAttachments([]);
		$this->state['outbox'][(string)$id] = ['account_id' => $account->getId(), 'status' => null, 'send_at' => $message->getSendAt()];
		$this->save();
		return $message;
	}

	/** OutboxService::sendMessage, i.e. Send\Chain::process, step by step. */
	public function outboxSend(LocalMessage $message, Account $account): LocalMessage {
		$row = $this->state['outbox'][(string)$message->getId()] ?? null;
		if ($row === null || $row['account_id'] !== $account->getId()) {
			throw new \LogicException('sendMessage takes a message saveMessage stored for this account');
		}
		if ($row['status'] === LocalMessage::STATUS_ERROR) {
			throw new ServiceException('Could not send message because a previous send operation produced an unclear sent state.');
		}
		$sentMailboxId = $account->getMailAccount()->getSentMailboxId();
		if ($sentMailboxId === null) {
			return $this->outboxStatus($message, LocalMessage::STATUS_NO_SENT_MAILBOX);
		}
		$byType = [Recipient::TYPE_TO => [], Recipient::TYPE_CC => [], Recipient::TYPE_BCC => []];
		foreach ($message->getRecipients() ?? [] as $r) {
			if (str_ends_with(strtolower($r->getEmail()), '@' . self::REFUSED_DOMAIN)) {
				return $this->outboxStatus($message, LocalMessage::STATUS_SMPT_SEND_FAIL);
			}
			$byType[$r->getType()][] = $r->getEmail();
		}
		$this->state['sent'][] = [
			'from' => $account->getName() . ' <' . $account->getEMailAddress() . '>',
			'to' => $byType[Recipient::TYPE_TO], 'cc' => $byType[Recipient::TYPE_CC], 'bcc' => $byType[Recipient::TYPE_BCC],
			'subject' => $message->getSubject(), 'body' => $message->getBodyPlain(),
			'html' => $message->isHtml(), 'in_reply_to' => $message->getInReplyToMessageId(),
		];
		foreach ($message->getRecipients() ?? [] as $r) {
			if (str_ends_with(strtolower($r->getEmail()), '@' . self::UNCLEAR_DOMAIN)) {
				return $this->outboxStatus($message, LocalMessage::STATUS_ERROR); // went out, but the answer was lost
			}
		}
		$this->copyToSent($account, $sentMailboxId, $message, $byType);
		$this->flagReplied($account, $message->getInReplyToMessageId());
		unset($this->state['outbox'][(string)$message->getId()]);
		$message->setStatus(LocalMessage::STATUS_PROCESSED);
		$this->save();
		return $message;
	}

	/** OutboxService::deleteMessage: only the user's own entry. */
	public function outboxDelete(string $userId, LocalMessage $message): void {
		$row = $this->state['outbox'][(string)$message->getId()] ?? null;
		if ($row === null || $this->ownerOfAccount($row['account_id']) !== $userId) {
			throw new DoesNotExistException('no such outbox message');
		}
		unset($this->state['outbox'][(string)$message->getId()]);
		$this->save();
	}

	/** @return list<array<string, mixed>> the outbox entries left (the chain removes finished ones) */
	public function outbox(): array {
		return array_values($this->state['outbox'] ?? []);
	}

	private function outboxStatus(LocalMessage $message, int $status): LocalMessage {
		$message->setStatus($status);
		$this->state['outbox'][(string)$message->getId()]['status'] = $status; // LocalMessageMapper::update
		$this->save();
		return $message;
	}

	/** CopySentMessageHandler: the sent mail, as sent, into the account's Sent mailbox (seen). */
	private function copyToSent(Account $account, int $sentMailboxId, LocalMessage $message, array $byType): void {
		$id = $this->state['next_message_id']++;
		$list = static fn (array $emails): array => array_map(static fn (string $e) => ['label' => null, 'email' => $e], $emails);
		$this->state['messages'][] = [
			'id' => $id, 'uid' => 1000 + $id, 'mailbox_id' => $sentMailboxId, 'message_id' => '<sent-' . $id . '@fake.invalid>',
			'subject' => $message->getSubject(), 'sent_at' => time(), 'seen' => true,
			'from' => [['label' => $account->getName(), 'email' => $account->getEMailAddress()]],
			'to' => $list($byType[Recipient::TYPE_TO]), 'cc' => $list($byType[Recipient::TYPE_CC]), 'bcc' => $list($byType[Recipient::TYPE_BCC]),
			'plain' => $message->getBodyPlain(), 'html' => null, 'attachments' => [], 'answered' => false,
			'in_reply_to' => $message->getInReplyToMessageId(),
		];
	}

	/** FlagRepliedMessageHandler: every copy of the replied-to mail in the account, but in Sent or Drafts. */
	private function flagReplied(Account $account, ?string $inReplyTo): void {
		if ($inReplyTo === null) {
			return;
		}
		foreach ($this->state['messages'] as $i => $m) {
			$box = $this->mailboxRow($m['mailbox_id']);
			if ($m['message_id'] === $inReplyTo && $box['account_id'] === $account->getId()
				&& !in_array('sent', $box['special_use'], true) && !in_array('drafts', $box['special_use'], true)) {
				$this->state['messages'][$i]['answered'] = true;
			}
		}
	}

	private function specialMailbox(int $accountId, string $use): ?array {
		foreach ($this->state['mailboxes'] as $m) {
			if ($m['account_id'] === $accountId && in_array($use, $m['special_use'], true)) {
				return $m;
			}
		}
		return null;
	}

	private function mailboxRow(int $id): array {
		foreach ($this->state['mailboxes'] as $m) {
			if ($m['id'] === $id) {
				return $m;
			}
		}
		throw new \LogicException("no mailbox $id");
	}

	public function sendMdn(Account $account, Mailbox $mailbox, Message $message): void {
		throw new \LogicException(__FUNCTION__);
	}

	// ---- internals -----------------------------------------------------------------------

	private function matches(array $m, string $filter): bool {
		foreach (explode(' ', $filter) as $token) {
			if ($token === '') {
				continue;
			}
			[$type, $param] = str_contains($token, ':') ? explode(':', $token, 2) : ['', $token];
			$ok = match (strtolower($type)) {
				'from' => self::mentions($m['from'], $param),
				'to' => self::mentions(array_merge($m['to'], $m['cc']), $param),
				'is' => $param === 'unread' ? !$m['seen'] : ($param === 'read' ? $m['seen'] : true),
				'start' => $m['sent_at'] >= (int)$param,
				'end' => $m['sent_at'] <= (int)$param,
				default => str_contains(mb_strtolower($m['subject'] . "\n" . $m['plain'] . "\n" . ($m['html'] ?? '')), mb_strtolower($token)),
			};
			if (!$ok) {
				return false;
			}
		}
		return true;
	}

	private static function mentions(array $addresses, string $word): bool {
		foreach ($addresses as $a) {
			if (str_contains(mb_strtolower(($a['label'] ?? '') . ' ' . $a['email']), mb_strtolower($word))) {
				return true;
			}
		}
		return false;
	}

	private function messageRow(int $id): ?array {
		foreach ($this->state['messages'] as $m) {
			if ($m['id'] === $id) {
				return $m;
			}
		}
		return null;
	}

	private function ownerOfAccount(int $accountId): ?string {
		foreach ($this->state['accounts'] as $a) {
			if ($a['id'] === $accountId) {
				return $a['uid'];
			}
		}
		return null;
	}

	private function ownerOfMailbox(int $mailboxId): ?string {
		foreach ($this->state['mailboxes'] as $m) {
			if ($m['id'] === $mailboxId) {
				return $this->ownerOfAccount($m['account_id']);
			}
		}
		return null;
	}

	private function mailboxObject(array $m): Mailbox {
		$in = array_filter($this->state['messages'], static fn (array $x) => $x['mailbox_id'] === $m['id']);
		$unseen = count(array_filter($in, static fn (array $x) => !$x['seen']));
		return new Mailbox($m['id'], $m['account_id'], $m['name'], json_encode($m['special_use']), $unseen, count($in));
	}

	private function messageObject(array $m): Message {
		$list = static fn (array $as): AddressList => new AddressList(array_map(
			static fn (array $a) => Address::fromRaw($a['label'] ?? $a['email'], $a['email']), $as));
		return new Message($m['id'], $m['uid'], $m['mailbox_id'], $m['message_id'], $m['subject'], $m['sent_at'],
			$m['seen'], $m['attachments'] !== [], $list($m['from']), $list($m['to']), $list($m['cc']), $m['answered'], $m['in_reply_to']);
	}

	private function save(): void {
		$handle = fopen($this->stateFile, 'c+');
		if ($handle === false) {
			throw new \RuntimeException("cannot write {$this->stateFile}");
		}
		flock($handle, LOCK_EX);
		ftruncate($handle, 0);
		fwrite($handle, json_encode($this->state, JSON_THROW_ON_ERROR | JSON_PRETTY_PRINT));
		fflush($handle);
		flock($handle, LOCK_UN);
		fclose($handle);
	}
}

/** Mail 5.x's IMAP message mapper over the fake: save() appends to the fake's mailbox. */
final class FakeImapMessageMapper extends ImapMessageMapper {
	public function __construct(private FakeMail $mail) {
	}

	public function save(Horde_Imap_Client_Socket $client, Mailbox $mailbox, string $mail, array $flags = []): int {
		return $this->mail->imapAppend($mailbox, $mail, $flags);
	}
}

/** Mail 5.x's OutboxService over the fake (saveMessage, then sendMessage runs the chain). */
final class FakeOutboxService extends OutboxService {
	public function __construct(private FakeMail $mail) {
	}

	public function saveMessage(Account $account, LocalMessage $message, array $to, array $cc, array $bcc, array $attachments = []): LocalMessage {
		if ($attachments !== []) {
			throw new \LogicException('the bridge sends no attachments');
		}
		return $this->mail->outboxSave($account, $message, $to, $cc, $bcc);
	}

	public function sendMessage(LocalMessage $message, Account $account): LocalMessage {
		return $this->mail->outboxSend($message, $account);
	}

	public function deleteMessage(string $userId, LocalMessage $message): void {
		$this->mail->outboxDelete($userId, $message);
	}
}

/** Mail's AccountService over the fake's accounts: a user's own, nothing else. */
final class FakeAccountService extends AccountService {
	public function __construct(private FakeMail $mail) {
	}

	public function findByUserId(string $currentUserId): array {
		return $this->mail->accountsOf($currentUserId);
	}
}
