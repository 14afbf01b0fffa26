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
use OCA\Mail\Db\Recipient;
use OCA\Mail\Exception\ClientException;
use OCA\Mail\Exception\ServiceException;
use OCA\Mail\IMAP\IMAPClientFactory;
use OCA\Mail\Model\NewMessageData;
use OCA\Mail\Service\AccountService;
use OCP\App\IAppManager;
use OCP\AppFramework\Db\DoesNotExistException;
use Psr\Container\ContainerInterface;

/**
 * The ONLY class of this app that touches Nextcloud Mail (docs/nextcloud-app.md, "Mail bridge").
 *
 * It calls Mail's PHP contracts on behalf of the session user, with the signatures of Mail 5.x
 * (the Mail versions for Nextcloud 30–33): IMailManager::getMailboxes/getMailbox/getMessage/
 * getImapMessage/getMessageIdForUid, IMailSearch::findMessages, IMailTransmission::sendMessage
 * (Account, LocalMessage) and ::saveDraft(NewMessageData). Two things Mail does not offer through
 * OCA\Mail\Contracts, so the narrowest public service is used and named here:
 * - listing a user's accounts: OCA\Mail\Service\AccountService::findByUserId (every lookup of an
 *   account goes through it, so an id that is not the user's is simply not found);
 * - the IMAP connection getImapMessage needs: OCA\Mail\IMAP\IMAPClientFactory::getClient.
 * It also builds Mail's own value objects (Account comes from Mail; LocalMessage, Recipient,
 * AddressList, Address, NewMessageData are what the contract methods take).
 *
 * Mail's services are fetched from the container only after available() said yes, so this class
 * loads (and the bridge answers 501) on a Nextcloud where Mail is missing or disabled.
 *
 * It returns plain arrays in the contract's shapes and throws MailError; it must never take a uid
 * from anywhere but the caller (the session user), never use an admin or cross-user lookup, and
 * never let a Mail exception's text decide what the caller learns about other users' data.
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
			&& class_exists(AccountService::class);
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
			fn () => $this->manager()->getMailboxes($account)));
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
				foreach ($this->backend(fn () => $this->manager()->getMailboxes($account)) as $mailbox) {
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
					throw MailError::backend('Mail cannot search this mailbox yet: ' . $e->getMessage());
				}
				continue;
			} catch (ServiceException $e) {
				throw MailError::backend('Mail could not search: ' . $e->getMessage());
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
		});
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
		return $this->summary($message, (int)$account->getId()) + [
			'cc' => $this->addresses($message->getCc()),
			'message_id' => $messageId === '' ? null : $messageId,
			'body' => $body,
			'attachments' => $attachments,
		];
	}

	/** @param array{account_id: int, to: list<string>, cc: list<string>, bcc: list<string>, subject: string, body: string, in_reply_to: ?int} $c */
	public function send(string $uid, array $c): void {
		$account = $this->account($uid, $c['account_id']);
		$replyTo = $c['in_reply_to'] === null ? null : (string)$this->ownMessage($uid, $c['in_reply_to'])->getMessageId();
		$local = new LocalMessage();
		$local->setType(LocalMessage::TYPE_OUTGOING);
		$local->setAccountId((int)$account->getId());
		$local->setSubject($c['subject']);
		$local->setBodyPlain($c['body']);
		$local->setBodyHtml(null);
		$local->setHtml(false); // plain text only: what the person saw is what goes out
		$local->setInReplyToMessageId($replyTo === '' ? null : $replyTo);
		$local->setAttachments([]);
		$local->setRecipients(array_merge(
			$this->recipients($c['to'], Recipient::TYPE_TO),
			$this->recipients($c['cc'], Recipient::TYPE_CC),
			$this->recipients($c['bcc'], Recipient::TYPE_BCC),
		));
		$this->backend(fn () => $this->transmission()->sendMessage($account, $local));
		// sendMessage reports most SMTP failures through the status, not an exception.
		if ($local->getStatus() !== LocalMessage::STATUS_RAW) {
			throw MailError::backend('Mail could not send the message (status ' . var_export($local->getStatus(), true) . ')');
		}
	}

	/**
	 * @param array{account_id: int, to: list<string>, cc: list<string>, bcc: list<string>, subject: string, body: string, in_reply_to: ?int} $c
	 * @return int|null the draft's message id, when Mail already knows it
	 */
	public function saveDraft(string $uid, array $c): ?int {
		$account = $this->account($uid, $c['account_id']);
		if ($c['in_reply_to'] !== null) {
			$this->ownMessage($uid, $c['in_reply_to']); // checked like for send; saveDraft takes no reply
		}
		$data = new NewMessageData($account, $this->addressList($c['to']), $this->addressList($c['cc']),
			$this->addressList($c['bcc']), $c['subject'], $c['body'], [], false);
		$saved = $this->backend(fn () => $this->transmission()->saveDraft($data));
		[, $draftsMailbox, $newUid] = $saved + [null, null, null];
		if (!$draftsMailbox instanceof Mailbox || !is_int($newUid)) {
			return null;
		}
		return $this->manager()->getMessageIdForUid($draftsMailbox, $newUid);
	}

	// ---- lookups, always scoped to the session user ---------------------------------------

	/** @return list<Account> */
	private function userAccounts(string $uid): array {
		return array_values($this->container->get(AccountService::class)->findByUserId($uid));
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

	/**
	 * Runs a Mail call; Mail's service failures (IMAP/SMTP) become 502 mail_backend.
	 *
	 * @template T
	 * @param callable(): T $call
	 * @return T
	 */
	private function backend(callable $call): mixed {
		try {
			return $call();
		} catch (ServiceException|ClientException $e) {
			throw MailError::backend('Mail reported: ' . $e->getMessage());
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
	 * @param list<string> $emails
	 * @return list<Recipient>
	 */
	private function recipients(array $emails, int $type): array {
		return array_map(static function (string $email) use ($type): Recipient {
			$r = new Recipient();
			$r->setType($type);
			$r->setLabel($email);
			$r->setEmail($email);
			return $r;
		}, $emails);
	}

	/** @param list<string> $emails */
	private function addressList(array $emails): AddressList {
		return new AddressList(array_map(static fn (string $e): Address => Address::fromRaw($e, $e), $emails));
	}
}
