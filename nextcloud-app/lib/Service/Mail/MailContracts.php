<?php

declare(strict_types=1);

namespace OCA\Tamebi\Service\Mail;

use OCA\Mail\Account;
use OCA\Mail\Address;
use OCA\Mail\AddressList;
use OCA\Mail\Contracts\IMailManager;
use OCA\Mail\Contracts\IMailSearch;
use OCA\Mail\Contracts\IMailTransmission;
use OCA\Mail\Db\LocalMessage;
use OCA\Mail\Db\Mailbox;
use OCA\Mail\Db\Message;
use OCA\Mail\Exception\ClientException;
use OCA\Mail\Exception\SentMailboxNotSetException;
use OCA\Mail\Exception\ServiceException;
use OCA\Mail\IMAP\IMAPClientFactory;
use OCA\Mail\IMAP\MessageMapper as ImapMessageMapper;
use OCA\Mail\Model\NewMessageData;
use OCA\Mail\Service\AccountService;
use OCA\Mail\Service\OutboxService;
use OCP\App\IAppManager;
use OCP\AppFramework\Db\DoesNotExistException;
use Psr\Container\ContainerInterface;

/**
 * The ONLY class of this app that touches Nextcloud Mail (docs/nextcloud-app.md, "Mail bridge").
 *
 * It calls Mail on behalf of the session user, with the signatures of Mail 5.x (the Mail
 * versions for Nextcloud 30–33, read from nextcloud/mail's stable5.x sources):
 * - the contracts IMailManager::getMailboxes/getMailbox/getMessage/getImapMessage/
 *   getMessageIdForUid, IMailSearch::findMessages and IMailTransmission::saveDraft(NewMessageData);
 * - for sending, OCA\Mail\Service\OutboxService::saveMessage + ::sendMessage, exactly what Mail's
 *   own web UI does (OutboxController::create, then ::send). sendMessage runs Mail's send chain
 *   (OCA\Mail\Send\Chain): the Sent-mailbox check, the anti-abuse check, the SMTP send, the copy
 *   into the Sent mailbox, the \Answered flag on the mail replied to, and the outbox clean-up.
 *   IMailTransmission::sendMessage alone is only the SMTP step: no Sent copy, no flag;
 * - listing a user's accounts: AccountService::findByUserId (every lookup of an account goes
 *   through it, so an id that is not the user's is simply not found);
 * - the IMAP connection getImapMessage needs: IMAPClientFactory::getClient;
 * - for a reply draft only, IMAP\\MessageMapper::save and Horde_Mime_Mail, as Mail's own
 *   saveDraft uses them (see saveDraft: Mail's draft APIs drop In-Reply-To).
 * It also builds Mail's own value objects (Account comes from Mail; LocalMessage, AddressList,
 * Address, NewMessageData are what those methods take).
 *
 * Mail's services are fetched from the container only after available() said yes, so this class
 * loads (and the bridge answers 501) on a Nextcloud where Mail is missing or disabled.
 *
 * It returns plain arrays in the contract's shapes and throws MailError; it must never take a uid
 * from anywhere but the caller (the session user), never use an admin or cross-user lookup, and
 * never put a Mail, IMAP or SMTP message into an answer (they go to the log as the cause).
 */
final class MailContracts {
	public function __construct(
		private IAppManager $apps,
		private ContainerInterface $container,
	) {
	}

	/** Mail is installed, enabled for the session user, and has the contracts we call. */
	public function available(): bool {
		return $this->apps->isEnabledForUser('mail') === true
			&& interface_exists(IMailManager::class)
			&& interface_exists(IMailSearch::class)
			&& interface_exists(IMailTransmission::class)
			&& class_exists(AccountService::class)
			&& class_exists(OutboxService::class);
	}

	/** @return list<array{id: int, name: string, email: string}> */
	public function accounts(string $uid): array {
		return array_map(static fn (Account $a): array => [
			'id' => (int)$a->getId(),
			'name' => (string)$a->getName(),
			'email' => (string)$a->getEMailAddress(),
		], $this->userAccounts($uid));
	}

	/** @return list<array<string, mixed>> */
	public function mailboxes(string $uid, int $accountId): array {
		$account = $this->account($uid, $accountId);
		return array_map(fn (Mailbox $m): array => $this->mailboxJson($m), $this->backend(
			fn () => $this->manager()->getMailboxes($account), 'Mail could not list the mailboxes'));
	}

	/**
	 * Mail's search over one mailbox (given) or all the user's mailboxes, with Mail's filter
	 * syntax. Summaries carry an extra `_cc` list the bridge uses to filter and then drops.
	 *
	 * @return list<array<string, mixed>>
	 */
	public function search(string $uid, ?int $mailboxId, string $filter, int $limit): array {
		$targets = [];
		if ($mailboxId !== null) {
			$mailbox = $this->ownMailbox($uid, $mailboxId);
			$targets[] = [$this->account($uid, (int)$mailbox->getAccountId()), $mailbox];
		} else {
			foreach ($this->userAccounts($uid) as $account) {
				foreach ($this->backend(fn () => $this->manager()->getMailboxes($account), 'Mail could not list the mailboxes') as $mailbox) {
					$targets[] = [$account, $mailbox];
				}
			}
		}
		$out = [];
		foreach ($targets as [$account, $mailbox]) {
			try {
				$found = $this->searcher()->findMessages($account, $mailbox, IMailSearch::ORDER_NEWEST_FIRST,
					$filter === '' ? null : $filter, null, $limit, $uid, IMailSearch::VIEW_SINGLETON);
			} catch (ClientException $e) {
				// e.g. a mailbox Mail has not synchronised yet: searching everything skips it,
				// searching exactly that mailbox reports it.
				if ($mailboxId !== null) {
					throw MailError::backend('Mail cannot search this mailbox yet (it has not synchronised it)', $e);
				}
				continue;
			} catch (ServiceException|\Horde_Imap_Client_Exception $e) {
				throw MailError::backend('Mail could not search', $e);
			}
			foreach ($found as $message) {
				$out[] = $this->summary($message, (int)$account->getId()) + ['_cc' => $this->addresses($message->getCc())];
			}
		}
		return $out;
	}

	/** @return array<string, mixed> the message with its body and attachments */
	public function message(string $uid, int $id): array {
		$message = $this->ownMessage($uid, $id);
		$mailbox = $this->ownMailbox($uid, (int)$message->getMailboxId());
		$account = $this->account($uid, (int)$mailbox->getAccountId());
		[$full, $plain] = $this->backend(function () use ($account, $mailbox, $message): array {
			$client = $this->container->get(IMAPClientFactory::class)->getClient($account);
			try {
				$imap = $this->manager()->getImapMessage($client, $account, $mailbox, (int)$message->getUid(), true);
				return [$imap->getFullMessage((int)$message->getId()), $imap->getPlainBody()];
			} finally {
				$client->logout();
			}
		}, 'Mail could not fetch the message');
		// The body as Mail has it (the bridge converts nothing; mcp-mail turns HTML into text).
		$body = empty($full['hasHtmlBody'])
			? ['format' => 'text', 'content' => (string)$plain]
			: ['format' => 'html', 'content' => (string)($full['body'] ?? '')];
		$attachments = array_map(static fn (array $a): array => [
			'name' => (string)($a['fileName'] ?? 'attachment'),
			'mime_type' => strtolower((string)($a['mime'] ?? 'application/octet-stream')),
			'size' => (int)($a['size'] ?? 0),
		], array_values($full['attachments'] ?? []));
		$messageId = (string)$message->getMessageId();
		$inReplyTo = (string)$message->getInReplyTo();
		return $this->summary($message, (int)$account->getId()) + [
			'cc' => $this->addresses($message->getCc()),
			'message_id' => $messageId === '' ? null : $messageId,
			'in_reply_to' => $inReplyTo === '' ? null : $inReplyTo,
			'body' => $body,
			'attachments' => $attachments,
		];
	}

	/**
	 * Sends through Mail's outbox and send chain, as Mail's web UI does: the message is saved as
	 * an outbox message (OutboxService::saveMessage), then sent at once (OutboxService::sendMessage,
	 * i.e. Send\Chain). It gets no send time, so Mail's background outbox job (which only picks
	 * messages with one) never retries it behind the person's back.
	 *
	 * @param array{account_id: int, to: list<string>, cc: list<string>, bcc: list<string>, subject: string, body: string, in_reply_to: ?int} $c
	 */
	public function send(string $uid, array $c): void {
		$account = $this->account($uid, $c['account_id']);
		$replyTo = $c['in_reply_to'] === null ? null : (string)$this->ownMessage($uid, $c['in_reply_to'])->getMessageId();
		$local = new LocalMessage();
		$local->setType(LocalMessage::TYPE_OUTGOING);
		$local->setAccountId((int)$account->getId());
		$local->setAliasId(null);
		$local->setSubject($c['subject']);
		$local->setBodyPlain($c['body']);
		$local->setBodyHtml(null);
		$local->setEditorBody(null);
		$local->setHtml(false); // plain text only: what the person saw is what goes out
		$local->setInReplyToMessageId($replyTo === '' ? null : $replyTo);
		$local->setSendAt(null);
		$local->setPgpMime(false);
		$local->setSmimeSign(false);
		$local->setSmimeEncrypt(false);
		$local->setRequestMdn(false);
		$outbox = $this->outbox();
		// Until sendMessage is called nothing can have gone out: any failure (Mail's, or its
		// database's: the mapper rethrows whatever it caught) is a plain 502, never "unknown".
		try {
			$saved = $outbox->saveMessage($account, $local, self::recipients($c['to']),
				self::recipients($c['cc']), self::recipients($c['bcc']));
		} catch (\Throwable $e) {
			throw MailError::backend('Mail could not prepare the message', $e);
		}
		try {
			$result = $outbox->sendMessage($saved, $account);
		} catch (SentMailboxNotSetException) {
			// Some Mail releases throw this from the chain's first step (SentMailboxHandler)
			// instead of setting STATUS_NO_SENT_MAILBOX: before SMTP, so nothing went out. (A
			// Mail without the class never throws it; PHP then never matches this catch.)
			$this->discard($uid, $outbox, $saved);
			throw MailError::noSentMailbox();
		} catch (\Throwable $e) {
			// Thrown from inside the chain: the SMTP step may or may not have happened.
			$this->discard($uid, $outbox, $saved);
			throw MailError::sendOutcomeUnknown($e);
		}
		$status = $result->getStatus();
		if ($status === LocalMessage::STATUS_PROCESSED) {
			return; // sent, copied to Sent, the replied-to mail flagged; Mail removed the outbox entry
		}
		if ($status === LocalMessage::STATUS_IMAP_SENT_MAILBOX_FAIL) {
			// Sent, but the copy into Sent failed. The entry stays in Mail's outbox (it has no
			// send time, so no background job picks it up): sending it again from Mail only
			// retries the copy, as the chain skips SMTP at this status.
			return;
		}
		if ($status === LocalMessage::STATUS_ERROR) {
			// Mail's "unclear sent state" (an SMTP error other than a definite refusal). The entry
			// is kept: it is Mail's record of the unclear state, and Mail refuses to resend it.
			throw MailError::sendOutcomeUnknown(new \RuntimeException('Mail reported an unclear sent state'));
		}
		// Every other end state means the chain stopped; the outbox entry would only confuse.
		$this->discard($uid, $outbox, $result);
		if ($status === LocalMessage::STATUS_SMPT_SEND_FAIL) {
			throw MailError::backend('the mail server refused the message; nothing was sent');
		}
		if ($status === LocalMessage::STATUS_NO_SENT_MAILBOX) {
			throw MailError::noSentMailbox();
		}
		// A state this bridge does not know (a newer Mail?): never claim that nothing was sent.
		throw MailError::sendOutcomeUnknown(new \RuntimeException('send chain ended with status ' . var_export($status, true)));
	}

	/** Removes an outbox entry the chain did not finish; a failure here changes nothing for the caller. */
	private function discard(string $uid, OutboxService $outbox, LocalMessage $message): void {
		try {
			$outbox->deleteMessage($uid, $message);
		} catch (\Throwable) {
			// Nothing to add: the answer is already decided, and Mail's outbox shows the entry.
		}
	}

	/**
	 * Saves a draft into the account's Drafts mailbox. A new mail goes through Mail's contract
	 * IMailTransmission::saveDraft. A reply cannot: neither saveDraft (NewMessageData has no
	 * reply field) nor Mail's local drafts (MailTransmission::saveLocalDraft) write In-Reply-To,
	 * so the draft would lose its thread. For a reply the bridge builds the draft exactly as
	 * saveDraft does (Horde_Mime_Mail, From the account, a Date and a Message-ID, stored with
	 * \\Draft through Mail's IMAP\\MessageMapper::save) and adds In-Reply-To and References.
	 *
	 * @param array{account_id: int, to: list<string>, cc: list<string>, bcc: list<string>, subject: string, body: string, in_reply_to: ?int} $c
	 * @return int|null the draft's message id, when Mail already knows it
	 */
	public function saveDraft(string $uid, array $c): ?int {
		$account = $this->account($uid, $c['account_id']);
		if ($c['in_reply_to'] !== null) {
			$original = (string)$this->ownMessage($uid, $c['in_reply_to'])->getMessageId();
			if ($original !== '') {
				return $this->saveReplyDraft($uid, $account, $c, $original);
			}
		}
		// Mail's saveDraft throws a bare ClientException for this, which would read as a passing
		// backend failure: it is a setting only the person can change.
		if ($account->getMailAccount()->getDraftsMailboxId() === null) {
			throw MailError::noDraftsMailbox();
		}
		$data = new NewMessageData($account, $this->addressList($c['to']), $this->addressList($c['cc']),
			$this->addressList($c['bcc']), $c['subject'], $c['body'], [], false);
		$saved = $this->backend(fn () => $this->transmission()->saveDraft($data), 'Mail could not save the draft');
		[, $draftsMailbox, $newUid] = $saved + [null, null, null];
		if (!$draftsMailbox instanceof Mailbox || !is_int($newUid)) {
			return null;
		}
		return $this->backend(fn () => $this->manager()->getMessageIdForUid($draftsMailbox, $newUid), 'Mail could not find the saved draft');
	}

	/** @param array{account_id: int, to: list<string>, cc: list<string>, bcc: list<string>, subject: string, body: string, in_reply_to: ?int} $c */
	private function saveReplyDraft(string $uid, Account $account, array $c, string $inReplyTo): ?int {
		$draftsId = $account->getMailAccount()->getDraftsMailboxId();
		if ($draftsId === null) {
			throw MailError::noDraftsMailbox();
		}
		$drafts = $this->ownMailbox($uid, (int)$draftsId);
		$mail = new \Horde_Mime_Mail();
		$mail->addHeaders([
			'From' => Address::fromRaw((string)$account->getName(), (string)$account->getEMailAddress())->toHorde(),
			'To' => $this->addressList($c['to'])->toHorde(),
			'Cc' => $this->addressList($c['cc'])->toHorde(),
			'Bcc' => $this->addressList($c['bcc'])->toHorde(),
			'Subject' => $c['subject'],
			'Date' => \Horde_Mime_Headers_Date::create(),
			'In-Reply-To' => $inReplyTo,
			'References' => $inReplyTo,
		]);
		$mail->setBody($c['body']);
		$mail->addHeaderOb(\Horde_Mime_Headers_MessageId::create());
		$newUid = $this->backend(function () use ($account, $drafts, $mail): int {
			$mail->send(new \Horde_Mail_Transport_Null(), false, false); // builds the message, sends nothing
			$client = $this->container->get(IMAPClientFactory::class)->getClient($account);
			try {
				return $this->container->get(ImapMessageMapper::class)->save($client, $drafts, $mail->getRaw(false), [\Horde_Imap_Client::FLAG_DRAFT]);
			} finally {
				$client->logout();
			}
		}, 'Mail could not save the draft');
		return $this->backend(fn () => $this->manager()->getMessageIdForUid($drafts, $newUid), 'Mail could not find the saved draft');
	}

	// ---- lookups, always scoped to the session user ---------------------------------------

	/** @return list<Account> */
	private function userAccounts(string $uid): array {
		return array_values($this->backend(fn () => $this->container->get(AccountService::class)->findByUserId($uid),
			'Mail could not list the accounts'));
	}

	private function account(string $uid, int $accountId): Account {
		foreach ($this->userAccounts($uid) as $account) {
			if ((int)$account->getId() === $accountId) {
				return $account;
			}
		}
		throw MailError::notFound('account');
	}

	private function ownMailbox(string $uid, int $mailboxId): Mailbox {
		try {
			return $this->manager()->getMailbox($uid, $mailboxId);
		} catch (ClientException|DoesNotExistException) {
			throw MailError::notFound('mailbox');
		}
	}

	private function ownMessage(string $uid, int $id): Message {
		try {
			return $this->manager()->getMessage($uid, $id);
		} catch (DoesNotExistException|ClientException) {
			throw MailError::notFound('message');
		}
	}

	// ---- Mail's services, from the container once Mail is known to be there ----------------

	private function manager(): IMailManager {
		return $this->container->get(IMailManager::class);
	}

	private function searcher(): IMailSearch {
		return $this->container->get(IMailSearch::class);
	}

	private function transmission(): IMailTransmission {
		return $this->container->get(IMailTransmission::class);
	}

	private function outbox(): OutboxService {
		return $this->container->get(OutboxService::class);
	}

	/**
	 * Runs a Mail call; Mail's service failures and IMAP errors become 502 mail_backend with the
	 * fixed `$failure` text (what Mail said is only logged, as the cause).
	 *
	 * @template T
	 * @param callable(): T $call
	 * @return T
	 */
	private function backend(callable $call, string $failure): mixed {
		try {
			return $call();
		} catch (ServiceException|ClientException|\Horde_Exception|\Horde_Imap_Client_Exception $e) {
			throw MailError::backend($failure, $e);
		}
	}

	// ---- Mail's objects -> the contract's shapes -------------------------------------------

	/** @return array<string, mixed> */
	private function mailboxJson(Mailbox $m): array {
		$special = json_decode((string)($m->getSpecialUse() ?? '[]'), true);
		$special = is_array($special) ? $special : [];
		return [
			'id' => (int)$m->getId(),
			'account_id' => (int)$m->getAccountId(),
			'name' => (string)$m->getName(),
			'special_use' => array_values(array_map(static fn ($s): string => strtolower(ltrim((string)$s, '\\')), $special)),
			'unread' => (int)$m->getUnseen(),
			'total' => (int)$m->getMessages(),
		];
	}

	/** @return array<string, mixed> */
	private function summary(Message $m, int $accountId): array {
		return [
			'id' => (int)$m->getId(),
			'account_id' => $accountId,
			'mailbox_id' => (int)$m->getMailboxId(),
			'subject' => (string)$m->getSubject(),
			'from' => $this->addresses($m->getFrom()),
			'to' => $this->addresses($m->getTo()),
			'date' => gmdate('Y-m-d\TH:i:s\Z', (int)$m->getSentAt()),
			'unread' => $m->getFlagSeen() !== true,
			'answered' => $m->getFlagAnswered() === true,
			'has_attachments' => $m->getFlagAttachments() === true,
		];
	}

	/** @return list<array{label: ?string, email: string}> */
	private function addresses(AddressList $list): array {
		$out = [];
		foreach ($list->iterate() as $address) {
			$email = (string)$address->getEmail();
			if ($email === '') {
				continue;
			}
			$label = $address->getLabel();
			// Mail falls back to the address when there is no name: the contract says null.
			$out[] = ['label' => ($label === null || $label === '' || $label === $email) ? null : $label, 'email' => $email];
		}
		return $out;
	}

	/**
	 * Recipients as OutboxService::saveMessage takes them (it builds Mail's Recipient rows).
	 *
	 * @param list<string> $emails
	 * @return list<array{label: string, email: string}>
	 */
	private static function recipients(array $emails): array {
		return array_map(static fn (string $email): array => ['label' => $email, 'email' => $email], $emails);
	}

	/** @param list<string> $emails */
	private function addressList(array $emails): AddressList {
		return new AddressList(array_map(static fn (string $e): Address => Address::fromRaw($e, $e), $emails));
	}
}
