<?php

declare(strict_types=1);

// Stubs of Nextcloud Mail, which is not installed here. The three contract interfaces
// (OCA\Mail\Contracts\IMailManager, IMailSearch, IMailTransmission) are declared with exactly the
// method signatures of Mail 5.x (the Mail releases for Nextcloud 30–33, read from nextcloud/mail's
// lib/Contracts), so a fake that implements them here would implement the real ones too.
// OutboxService (a class in Mail, not a contract) has exactly the public signatures of Mail 5.x's
// saveMessage/sendMessage/deleteMessage and throws if anything else is called. The classes those
// signatures name (Account, Mailbox, Message, LocalMessage, AddressList, Address, NewMessageData,
// IMAPMessage, AccountService, IMAPClientFactory) are reduced to the members the bridge uses, with
// Mail's names, types and semantics (Address::getLabel falls back to the address;
// Mailbox::getSpecialUse is the JSON column; LocalMessage's status constants and its accessors,
// which refuse a field LocalMessage does not have).

namespace OCA\Mail\Exception {
	class ClientException extends \Exception {
	}

	class ServiceException extends \Exception {
	}

	/** Thrown by some Mail releases' Send\SentMailboxHandler, before SMTP. */
	class SentMailboxNotSetException extends ClientException {
		public function __construct() {
			parent::__construct('No sent mailbox configured');
		}
	}
}

namespace {
	/** Horde's errors, which Mail's services let through in places. */
	class Horde_Exception extends \Exception {
	}

	class Horde_Imap_Client_Exception extends Horde_Exception {
	}
}

namespace OCA\Mail {
	class Address implements \JsonSerializable {
		private function __construct(private ?string $personal, private string $email) {
		}

		public static function fromRaw(string $label, string $email): self {
			return new self($label !== $email ? $label : null, $email);
		}

		public function getLabel(): ?string {
			return $this->personal ?? $this->getEmail();
		}

		public function getEmail(): ?string {
			return $this->email;
		}

		public function jsonSerialize(): mixed {
			return ['label' => $this->getLabel(), 'email' => $this->getEmail()];
		}

		public function toHorde(): \Horde_Mail_Rfc822_Address {
			return new \Horde_Mail_Rfc822_Address($this->email, $this->personal);
		}
	}

	class AddressList implements \Countable, \JsonSerializable {
		/** @param Address[] $addresses */
		public function __construct(private array $addresses = []) {
		}

		public function first() {
			return $this->addresses[0] ?? null;
		}

		public function count(): int {
			return count($this->addresses);
		}

		public function iterate(): \Generator {
			foreach ($this->addresses as $address) {
				yield $address;
			}
		}

		public function jsonSerialize(): mixed {
			return array_map(static fn (Address $a) => $a->jsonSerialize(), $this->addresses);
		}

		public function toHorde(): \Horde_Mail_Rfc822_List {
			return new \Horde_Mail_Rfc822_List(array_map(static fn (Address $a) => $a->toHorde(), $this->addresses));
		}
	}

	class Account {
		public function __construct(private Db\MailAccount $account) {
		}

		public function getId(): int {
			return $this->account->getId();
		}

		public function getName(): string {
			return $this->account->getName();
		}

		public function getEMailAddress(): string {
			return $this->account->getEmail();
		}

		public function getUserId(): string {
			return $this->account->getUserId();
		}

		public function getMailAccount(): Db\MailAccount {
			return $this->account;
		}
	}
}

namespace OCA\Mail\Db {
	use OCA\Mail\AddressList;

	/** Mail's entities have magic getters/setters (OCP\AppFramework\Db\Entity); these spell out the used ones. */
	class MailAccount {
		public function __construct(private int $id, private string $userId, private string $name, private string $email) {
		}

		public function getId(): int {
			return $this->id;
		}

		public function getUserId(): string {
			return $this->userId;
		}

		public function getName(): string {
			return $this->name;
		}

		public function getEmail(): string {
			return $this->email;
		}

		public function getDraftsMailboxId(): ?int {
			return $this->draftsMailboxId;
		}

		public function setDraftsMailboxId(?int $id): void {
			$this->draftsMailboxId = $id;
		}

		private ?int $draftsMailboxId = null;

		/** The Sent mailbox Mail copies sent mail into (Send\Chain refuses to send without one). */
		public function getSentMailboxId(): ?int {
			return $this->sentMailboxId;
		}

		public function setSentMailboxId(?int $id): void {
			$this->sentMailboxId = $id;
		}

		private ?int $sentMailboxId = null;
	}

	class Mailbox {
		public function __construct(
			private int $id,
			private int $accountId,
			private string $name,
			private ?string $specialUse,
			private int $unseen,
			private int $messages,
		) {
		}

		public function getId(): int {
			return $this->id;
		}

		public function getAccountId(): int {
			return $this->accountId;
		}

		public function getName(): string {
			return $this->name;
		}

		public function getSpecialUse(): ?string {
			return $this->specialUse;
		}

		public function getUnseen(): int {
			return $this->unseen;
		}

		public function getMessages(): int {
			return $this->messages;
		}
	}

	class Message {
		public function __construct(
			private int $id,
			private int $uid,
			private int $mailboxId,
			private ?string $messageId,
			private string $subject,
			private int $sentAt,
			private bool $flagSeen,
			private ?bool $flagAttachments,
			private AddressList $from,
			private AddressList $to,
			private AddressList $cc,
			private bool $flagAnswered = false,
			private ?string $inReplyTo = null,
		) {
		}

		public function getFlagAnswered(): bool {
			return $this->flagAnswered;
		}

		public function getInReplyTo(): ?string {
			return $this->inReplyTo;
		}

		public function getId(): int {
			return $this->id;
		}

		public function getUid(): int {
			return $this->uid;
		}

		public function getMailboxId(): int {
			return $this->mailboxId;
		}

		public function getMessageId(): ?string {
			return $this->messageId;
		}

		public function getSubject(): string {
			return $this->subject;
		}

		public function getSentAt(): int {
			return $this->sentAt;
		}

		public function getFlagSeen(): ?bool {
			return $this->flagSeen;
		}

		public function getFlagAttachments(): ?bool {
			return $this->flagAttachments;
		}

		public function getFrom(): AddressList {
			return $this->from;
		}

		public function getTo(): AddressList {
			return $this->to;
		}

		public function getCc(): AddressList {
			return $this->cc;
		}
	}

	class LocalMessage {
		public const TYPE_OUTGOING = 0;
		public const TYPE_DRAFT = 1;
		public const STATUS_RAW = 0;
		public const STATUS_NO_SENT_MAILBOX = 1;
		public const STATUS_SMPT_SEND_FAIL = 10;
		public const STATUS_IMAP_SENT_MAILBOX_FAIL = 11;
		public const STATUS_PROCESSED = 12;
		public const STATUS_ERROR = 13;

		private array $fields = [];
		private ?array $attachments = null;
		private ?array $recipients = null;

		/** Entity's magic accessors: setX($v) / getX() / isX() over the declared fields. */
		public function __call(string $name, array $args): mixed {
			$allowed = ['Id', 'Type', 'AccountId', 'AliasId', 'SendAt', 'Subject', 'BodyPlain', 'BodyHtml', 'EditorBody', 'Html',
				'Failed', 'InReplyToMessageId', 'UpdatedAt', 'PgpMime', 'SmimeSign', 'SmimeCertificateId', 'SmimeEncrypt', 'Status',
				'Raw', 'RequestMdn'];
			foreach (['set', 'get', 'is'] as $prefix) {
				if (str_starts_with($name, $prefix) && in_array(substr($name, strlen($prefix)), $allowed, true)) {
					$field = substr($name, strlen($prefix));
					if ($prefix === 'set') {
						$this->fields[$field] = $args[0];
						return null;
					}
					return $this->fields[$field] ?? null;
				}
			}
			throw new \BadMethodCallException($name);
		}

		public function setAttachments(array $attachments): void {
			$this->attachments = $attachments;
		}

		public function getAttachments(): ?array {
			return $this->attachments;
		}

		public function setRecipients(array $recipients): void {
			$this->recipients = $recipients;
		}

		public function getRecipients(): ?array {
			return $this->recipients;
		}
	}

	final class Recipient {
		public const TYPE_FROM = 0;
		public const TYPE_TO = 1;
		public const TYPE_CC = 2;
		public const TYPE_BCC = 3;

		private int $type = 0;
		private string $label = '';
		private string $email = '';

		public function getType(): int {
			return $this->type;
		}

		public function setType(int $type): void {
			$this->type = $type;
		}

		public function getLabel(): string {
			return $this->label;
		}

		public function setLabel(string $label): void {
			$this->label = $label;
		}

		public function getEmail(): string {
			return $this->email;
		}

		public function setEmail(string $email): void {
			$this->email = $email;
		}
	}
}

namespace OCA\Mail\Model {
	use OCA\Mail\Account;
	use OCA\Mail\AddressList;

	class NewMessageData {
		public function __construct(
			private Account $account,
			private AddressList $to,
			private AddressList $cc,
			private AddressList $bcc,
			private string $subject,
			private string $body,
			private array $attachments = [],
			private bool $isHtml = true,
			private bool $isMdnRequested = false,
		) {
		}

		public function getAccount(): Account {
			return $this->account;
		}

		public function getTo(): AddressList {
			return $this->to;
		}

		public function getCc(): AddressList {
			return $this->cc;
		}

		public function getBcc(): AddressList {
			return $this->bcc;
		}

		public function getSubject(): string {
			return $this->subject;
		}

		public function getBody(): string {
			return $this->body;
		}

		public function isHtml(): bool {
			return $this->isHtml;
		}
	}

	/** The parsed IMAP message: getFullMessage() as Mail builds it (body + hasHtmlBody + attachments). */
	class IMAPMessage {
		public function __construct(private string $plain, private ?string $html, private array $attachments) {
		}

		public function getPlainBody(): string {
			return $this->plain;
		}

		public function getFullMessage(int $id, bool $loadBody = true): array {
			$data = ['attachments' => $this->attachments];
			if ($this->html !== null) {
				$data['hasHtmlBody'] = true;
				$data['body'] = $this->html;
			} else {
				$data['body'] = $this->plain;
			}
			return $data;
		}
	}
}

namespace OCA\Mail\Service {
	use OCA\Mail\Account;
	use OCA\Mail\Db\LocalMessage;

	class AccountService {
		/** @return list<\OCA\Mail\Account> */
		public function findByUserId(string $currentUserId): array {
			return [];
		}
	}

	/** Mail 5.x's outbox: these three public methods, with exactly Mail's signatures. */
	class OutboxService {
		/**
		 * @param array<int, array{email: string, label?: string}> $to
		 * @param array<int, array{email: string, label?: string}> $cc
		 * @param array<int, array{email: string, label?: string}> $bcc
		 */
		public function saveMessage(Account $account, LocalMessage $message, array $to, array $cc, array $bcc, array $attachments = []): LocalMessage {
			throw new \LogicException(__FUNCTION__);
		}

		/** Runs Mail's Send\Chain. */
		public function sendMessage(LocalMessage $message, Account $account): LocalMessage {
			throw new \LogicException(__FUNCTION__);
		}

		public function deleteMessage(string $userId, LocalMessage $message): void {
			throw new \LogicException(__FUNCTION__);
		}
	}
}

namespace OCA\Mail\IMAP {
	/** Mail 5.x's IMAP message mapper: save() APPENDs a raw message (Mail adds \\Seen to the flags). */
	class MessageMapper {
		public function save(\Horde_Imap_Client_Socket $client, \OCA\Mail\Db\Mailbox $mailbox, string $mail, array $flags = []): int {
			throw new \LogicException(__FUNCTION__);
		}
	}

	class IMAPClientFactory {
		public function getClient(\OCA\Mail\Account $account, bool $useCache = true): \Horde_Imap_Client_Socket {
			return new \Horde_Imap_Client_Socket();
		}
	}
}

namespace {
	// Horde, which Mail bundles: the members the bridge uses to build a draft, as Mail's own
	// MailTransmission::saveDraft does. Horde_Mime_Mail renders a real RFC 5322 message (headers
	// folded to one line each, RFC 2047 for non-ASCII words), available after send().
	class Horde_Imap_Client {
		public const FLAG_DRAFT = '\\draft';
		public const FLAG_SEEN = '\\seen';
	}

	class Horde_Mail_Rfc822_Address {
		public function __construct(public string $bare_address, public ?string $personal = null) {
		}

		public function __toString(): string {
			return $this->personal === null ? $this->bare_address
				: mb_encode_mimeheader($this->personal, 'UTF-8', 'Q') . ' <' . $this->bare_address . '>';
		}
	}

	class Horde_Mail_Rfc822_List implements \Countable {
		/** @param list<Horde_Mail_Rfc822_Address> $addresses */
		public function __construct(public array $addresses = []) {
		}

		public function count(): int {
			return count($this->addresses);
		}

		public function __toString(): string {
			return implode(', ', array_map('strval', $this->addresses));
		}
	}

	class Horde_Mime_Headers_Date {
		public static function create(): self {
			return new self();
		}

		public function __toString(): string {
			return gmdate('D, d M Y H:i:s') . ' +0000';
		}
	}

	class Horde_Mime_Headers_MessageId {
		public function __construct(public string $value) {
		}

		public static function create(): self {
			return new self('<' . bin2hex(random_bytes(8)) . '@horde.invalid>');
		}
	}

	class Horde_Mail_Transport_Null {
	}

	class Horde_Mime_Mail {
		/** @var array<string, string> */
		private array $headers = [];
		private string $body = '';
		private ?string $raw = null;

		public function addHeaders(array $headers = []): void {
			foreach ($headers as $name => $value) {
				if ($value instanceof \Countable && count($value) === 0) {
					continue; // Horde leaves out an empty address header
				}
				$this->headers[(string)$name] = $value instanceof \Stringable || is_string($value) ? (string)$value
					: throw new \TypeError("header $name");
			}
		}

		public function addHeaderOb(Horde_Mime_Headers_MessageId $ob): void {
			$this->headers['Message-ID'] = $ob->value;
		}

		public function setBody(string $body, ?string $charset = null, bool $wrap = false): void {
			$this->body = $body;
		}

		public function send(Horde_Mail_Transport_Null $transport, bool $resend = false, bool $flowed = true): void {
			$lines = [];
			foreach ($this->headers as $name => $value) {
				$lines[] = $name . ': ' . ($name === 'Subject' ? mb_encode_mimeheader($value, 'UTF-8', 'Q') : $value);
			}
			$lines[] = 'MIME-Version: 1.0';
			$lines[] = 'Content-Type: text/plain; charset=utf-8';
			$lines[] = 'Content-Transfer-Encoding: base64';
			$this->raw = implode("\r\n", $lines) . "\r\n\r\n" . chunk_split(base64_encode($this->body), 76, "\r\n");
		}

		public function getRaw(bool $stream = true): string {
			if ($stream || $this->raw === null) {
				throw new \LogicException('getRaw(false) after send(), as Mail calls it');
			}
			return $this->raw;
		}
	}

	class Horde_Imap_Client_Socket {
		public bool $loggedOut = false;

		public function logout(): void {
			$this->loggedOut = true;
		}
	}
}

namespace OCA\Mail\Contracts {
	use Horde_Imap_Client_Socket;
	use OCA\Mail\Account;
	use OCA\Mail\Attachment;
	use OCA\Mail\Db\LocalMessage;
	use OCA\Mail\Db\Mailbox;
	use OCA\Mail\Db\Message;
	use OCA\Mail\Db\Tag;
	use OCA\Mail\Model\IMAPMessage;
	use OCA\Mail\Model\NewMessageData;
	use OCA\Mail\Service\Quota;
	use OCA\Mail\Service\Search\SearchQuery;
	use OCP\IUser;

	interface IMailManager {
		public function getMailbox(string $uid, int $id): Mailbox;
		public function getMailboxes(Account $account): array;
		public function createMailbox(Account $account, string $name): Mailbox;
		public function getMessageIdForUid(Mailbox $mailbox, $uid): ?int;
		public function getMessage(string $uid, int $id): Message;
		public function getSource(Horde_Imap_Client_Socket $client, Account $account, string $mailbox, int $uid): ?string;
		public function getImapMessage(Horde_Imap_Client_Socket $client, Account $account, Mailbox $mailbox, int $uid, bool $loadBody = false): IMAPMessage;
		public function getThread(Account $account, string $threadRootId): array;
		public function moveMessage(Account $sourceAccount, string $sourceFolderId, int $uid, Account $destinationAccount, string $destFolderId): ?int;
		public function deleteMessage(Account $account, string $mailboxId, int $messageUid): void;
		public function deleteMessageWithClient(Account $account, Mailbox $mailbox, int $messageUid, Horde_Imap_Client_Socket $client): void;
		public function markFolderAsRead(Account $account, Mailbox $mailbox): void;
		public function flagMessage(Account $account, string $mailbox, int $uid, string $flag, bool $value): void;
		public function tagMessage(Account $account, string $mailbox, Message $message, Tag $tag, bool $value): void;
		public function getQuota(Account $account): ?Quota;
		public function renameMailbox(Account $account, Mailbox $mailbox, string $name): Mailbox;
		public function deleteMailbox(Account $account, Mailbox $mailbox): void;
		public function clearMailbox(Account $account, Mailbox $mailbox): void;
		public function updateSubscription(Account $account, Mailbox $mailbox, bool $subscribed): Mailbox;
		public function enableMailboxBackgroundSync(Mailbox $mailbox, bool $syncInBackground): Mailbox;
		public function getMailAttachments(Account $account, Mailbox $mailbox, Message $message) : array;
		public function getMailAttachment(Account $account, Mailbox $mailbox, Message $message, string $attachmentId): Attachment;
		public function getTagByImapLabel(string $imapLabel, string $userId): Tag;
		public function isPermflagsEnabled(Horde_Imap_Client_Socket $client, Account $account, string $mailbox): bool;
		public function createTag(string $displayName, string $color, string $userId): Tag;
		public function updateTag(int $id, string $displayName, string $color, string $userId): Tag;
		public function deleteTag(int $id, string $userId, array $accounts): Tag;
		public function deleteTagForAccount(int $id, string $userId, Tag $tag, Account $account): void;
		public function moveThread(Account $srcAccount, Mailbox $srcMailbox, Account $dstAccount, Mailbox $dstMailbox, string $threadRootId): array;
		public function deleteThread(Account $account, Mailbox $mailbox, string $threadRootId): void;
		public function getByMessageId(Account $account, string $messageId): array;
	}

	interface IMailSearch {
		public const ORDER_NEWEST_FIRST = 'DESC';
		public const ORDER_OLDEST_FIRST = 'ASC';
		public const VIEW_SINGLETON = 'singleton';
		public const VIEW_THREADED = 'threaded';

		public function findMessage(Account $account, Mailbox $mailbox, Message $message): Message;
		public function findMessages(Account $account, Mailbox $mailbox, string $sortOrder, ?string $filter, ?int $cursor,
			?int $limit, ?string $userId, ?string $view): array;
		public function findMessagesGlobally(IUser $user, SearchQuery $query, ?int $limit): array;
	}

	interface IMailTransmission {
		public function sendMessage(Account $account, LocalMessage $localMessage): void;
		public function saveLocalDraft(Account $account, LocalMessage $message): void;
		public function saveDraft(NewMessageData $message, ?Message $previousDraft = null): array;
		public function sendMdn(Account $account, Mailbox $mailbox, Message $message): void;
	}
}
