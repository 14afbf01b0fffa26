<?php

declare(strict_types=1);

namespace OCA\Tamebi\Service\Mail;

/**
 * The mail bridge's contract (docs/mail-bridge-api.md): what each route accepts, refuses and
 * answers. Validation and shaping live here; Mail itself is reached only through MailContracts.
 * The stand-in's twin is dev/nextcloud-standin/standin/mail.py, and the shared suite in
 * dev/mail-contract holds both to the same answers.
 *
 * It must never take the acting user from a request (the controller passes the session user),
 * never answer 403 for someone else's data (404, as for an unknown id), and never send or save
 * anything the caller did not spell out field by field (unknown fields are refused).
 */
final class MailBridge {
	public const DEFAULT_LIMIT = 20;
	public const MAX_LIMIT = 50;
	public const MAX_RECIPIENTS = 100;
	public const MAX_SUBJECT = 998;
	public const MAX_BODY = 100000;
	/** One plain address, no display name (the same expression as the stand-in's). */
	public const ADDRESS = '/^[A-Za-z0-9!#$%&\'*+\/=?^_`{|}~.-]{1,64}@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+$/D';
	private const COMPOSE_FIELDS = ['account_id', 'to', 'cc', 'bcc', 'subject', 'body', 'in_reply_to'];

	public function __construct(
		private MailContracts $mail,
	) {
	}

	/** @return array{accounts: list<array<string, mixed>>} */
	public function accounts(string $uid): array {
		$this->requireMail();
		return ['accounts' => $this->mail->accounts($uid)];
	}

	/** @return array{mailboxes: list<array<string, mixed>>} */
	public function mailboxes(string $uid, string $accountId): array {
		$this->requireMail();
		return ['mailboxes' => $this->mail->mailboxes($uid, self::pathId($accountId, 'account'))];
	}

	/**
	 * @param array<string, ?string> $params query, mailbox_id, from, to, since, until, unread, limit
	 * @return array{messages: list<array<string, mixed>>}
	 */
	public function messages(string $uid, array $params): array {
		$this->requireMail();
		// An empty parameter is an absent one.
		$p = array_filter($params, static fn ($v): bool => $v !== null && $v !== '');
		$limit = self::limit($p['limit'] ?? null);
		$since = self::when($p['since'] ?? null, 'since', false);
		$until = self::when($p['until'] ?? null, 'until', true);
		$unread = self::unread($p['unread'] ?? null);
		$mailboxId = self::queryId($p['mailbox_id'] ?? null, 'mailbox_id');
		$from = self::word($p['from'] ?? null, 'from');
		$to = self::word($p['to'] ?? null, 'to');
		$words = preg_split('/\s+/u', str_replace(':', ' ', (string)($p['query'] ?? '')), -1, PREG_SPLIT_NO_EMPTY) ?: [];

		// Mail's filter syntax (OCA\Mail\Service\Search\FilterStringParser): space-separated
		// words, `from:`, `to:`, `is:unread`/`is:read`, `start:`/`end:` (unix seconds).
		$filter = $words;
		if ($from !== '') {
			$filter[] = 'from:' . $from;
		}
		if ($to !== '') {
			$filter[] = 'to:' . $to;
		}
		if ($unread !== null) {
			$filter[] = $unread ? 'is:unread' : 'is:read';
		}
		if ($since !== null) {
			$filter[] = 'start:' . $since;
		}
		if ($until !== null) {
			$filter[] = 'end:' . $until;
		}
		$found = $this->mail->search($uid, $mailboxId, implode(' ', $filter), $limit);

		// The contract's meaning holds whatever Mail's search matched: re-check what the
		// summaries can show (everything but the free-text words, which may match the body).
		$hits = array_values(array_filter($found, static function (array $m) use ($unread, $since, $until, $from, $to): bool {
			$when = strtotime($m['date']);
			return ($unread === null || $m['unread'] === $unread)
				&& ($since === null || $when >= $since)
				&& ($until === null || $when < $until)
				&& ($from === '' || self::mentions($m['from'], $from))
				&& ($to === '' || self::mentions(array_merge($m['to'], $m['_cc']), $to));
		}));
		usort($hits, static fn (array $a, array $b): int => [$b['date'], $b['id']] <=> [$a['date'], $a['id']]);
		$hits = array_slice($hits, 0, $limit);
		return ['messages' => array_map(static function (array $m): array {
			unset($m['_cc']);
			return $m;
		}, $hits)];
	}

	/** @return array<string, mixed> */
	public function message(string $uid, string $id): array {
		$this->requireMail();
		return $this->mail->message($uid, self::pathId($id, 'message'));
	}

	/** @return array{status: string} */
	public function send(string $uid, string $rawBody, string $contentType): array {
		$this->requireMail();
		$c = self::compose($rawBody, $contentType);
		if ($c['to'] === [] && $c['cc'] === [] && $c['bcc'] === []) {
			throw MailError::invalid('a message needs at least one recipient (to, cc or bcc)');
		}
		$this->mail->send($uid, $c);
		return ['status' => 'sent'];
	}

	/** @return array{status: string, draft_id: ?int} */
	public function draft(string $uid, string $rawBody, string $contentType): array {
		$this->requireMail();
		$c = self::compose($rawBody, $contentType);
		return ['status' => 'saved', 'draft_id' => $this->mail->saveDraft($uid, $c)];
	}

	private function requireMail(): void {
		if (!$this->mail->available()) {
			throw MailError::unavailable();
		}
	}

	// ---- parameters --------------------------------------------------------------------

	/** An id in the path: anything but digits is an id that does not exist. */
	private static function pathId(string $raw, string $what): int {
		if (preg_match('/^[0-9]{1,18}$/D', $raw) !== 1) {
			throw MailError::notFound($what);
		}
		return (int)$raw;
	}

	private static function queryId(?string $raw, string $name): ?int {
		if ($raw === null) {
			return null;
		}
		if (preg_match('/^[0-9]{1,18}$/D', $raw) !== 1) {
			throw MailError::invalid("$name must be an integer");
		}
		return (int)$raw;
	}

	private static function limit(?string $raw): int {
		if ($raw === null) {
			return self::DEFAULT_LIMIT;
		}
		if (preg_match('/^[0-9]{1,4}$/D', $raw) !== 1 || (int)$raw < 1 || (int)$raw > self::MAX_LIMIT) {
			throw MailError::invalid('limit must be an integer between 1 and ' . self::MAX_LIMIT);
		}
		return (int)$raw;
	}

	private static function unread(?string $raw): ?bool {
		if ($raw === null) {
			return null;
		}
		if ($raw !== 'true' && $raw !== 'false') {
			throw MailError::invalid('unread must be true or false');
		}
		return $raw === 'true';
	}

	/** from/to: one word (part of a name or an address), as Mail's filter syntax takes it. */
	private static function word(?string $raw, string $name): string {
		if ($raw === null) {
			return '';
		}
		if (strlen($raw) > 254 || preg_match('/[\s:]/u', $raw) === 1) {
			throw MailError::invalid("$name must be one word (part of a name or address): no spaces, no ':'");
		}
		return $raw;
	}

	/** Unix seconds of an RFC 3339 date-time or a full date (since: its start; until: the end of that day). */
	private static function when(?string $raw, string $name, bool $endOfDay): ?int {
		if ($raw === null) {
			return null;
		}
		if (preg_match('/^(\d{4})-(\d{2})-(\d{2})$/D', $raw, $d) === 1) {
			if (!checkdate((int)$d[2], (int)$d[3], (int)$d[1])) {
				throw MailError::invalid("$name is not a valid date");
			}
			$day = gmmktime(0, 0, 0, (int)$d[2], (int)$d[3], (int)$d[1]);
			return $endOfDay ? $day + 86400 : $day;
		}
		if (preg_match('/^(\d{4}-\d{2}-\d{2})[Tt](\d{2}:\d{2}:\d{2})(?:\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/D', $raw, $t) !== 1) {
			throw MailError::invalid("$name must be an RFC 3339 date-time (2026-11-24T09:00:00Z) or a date (2026-11-24)");
		}
		$zone = strtoupper($t[3]) === 'Z' ? '+00:00' : $t[3];
		$parsed = \DateTimeImmutable::createFromFormat('!Y-m-d H:i:sP', "{$t[1]} {$t[2]}$zone");
		$errors = \DateTimeImmutable::getLastErrors();
		if ($parsed === false || ($errors !== false && ($errors['warning_count'] > 0 || $errors['error_count'] > 0))) {
			throw MailError::invalid("$name is not a valid date-time");
		}
		return $parsed->getTimestamp();
	}

	/** @param list<array{label: ?string, email: string}> $addresses */
	private static function mentions(array $addresses, string $word): bool {
		$word = mb_strtolower($word);
		foreach ($addresses as $a) {
			if (str_contains(mb_strtolower(($a['label'] ?? '') . ' ' . $a['email']), $word)) {
				return true;
			}
		}
		return false;
	}

	/**
	 * The JSON body of /send and /drafts, checked field by field.
	 *
	 * @return array{account_id: int, to: list<string>, cc: list<string>, bcc: list<string>, subject: string, body: string, in_reply_to: ?int}
	 */
	public static function compose(string $raw, string $contentType): array {
		if (strtolower(trim(explode(';', $contentType)[0])) !== 'application/json') {
			throw MailError::invalid('the body must be JSON (Content-Type: application/json)');
		}
		try {
			$data = json_decode($raw === '' ? 'null' : $raw, false, 16, JSON_THROW_ON_ERROR);
		} catch (\JsonException) {
			throw MailError::invalid('the body is not valid JSON');
		}
		if (!$data instanceof \stdClass) {
			throw MailError::invalid('the body must be a JSON object');
		}
		$data = get_object_vars($data);
		$unknown = array_diff(array_keys($data), self::COMPOSE_FIELDS);
		if ($unknown !== []) {
			sort($unknown);
			throw MailError::invalid('unknown field(s): ' . implode(', ', $unknown));
		}
		$account = $data['account_id'] ?? null;
		if (!is_int($account)) {
			throw MailError::invalid('account_id must be an integer');
		}
		$lists = [];
		$count = 0;
		foreach (['to', 'cc', 'bcc'] as $name) {
			$value = array_key_exists($name, $data) ? $data[$name] : []; // null is not a list
			if (!is_array($value) || !array_is_list($value) || array_filter($value, 'is_string') !== $value) {
				throw MailError::invalid("$name must be a list of email addresses");
			}
			foreach ($value as $address) {
				if (strlen($address) > 254 || preg_match(self::ADDRESS, $address) !== 1) {
					throw MailError::invalid("$name: '$address' is not a valid email address (plain address@domain, no name)");
				}
			}
			$lists[$name] = $value;
			$count += count($value);
		}
		if ($count > self::MAX_RECIPIENTS) {
			throw MailError::invalid('at most ' . self::MAX_RECIPIENTS . ' recipients');
		}
		$subject = $data['subject'] ?? null;
		$body = $data['body'] ?? null;
		if (!is_string($subject)) {
			throw MailError::invalid('subject must be a string');
		}
		if (mb_strlen($subject, 'UTF-8') > self::MAX_SUBJECT || str_contains($subject, "\r") || str_contains($subject, "\n")) {
			throw MailError::invalid('subject must be one line of at most ' . self::MAX_SUBJECT . ' characters');
		}
		if (!is_string($body)) {
			throw MailError::invalid('body must be a string');
		}
		if (mb_strlen($body, 'UTF-8') > self::MAX_BODY) {
			throw MailError::invalid('body must be at most ' . self::MAX_BODY . ' characters');
		}
		$reply = $data['in_reply_to'] ?? null;
		if ($reply !== null && !is_int($reply)) {
			throw MailError::invalid('in_reply_to must be a message id (integer) or null');
		}
		return ['account_id' => $account, 'to' => $lists['to'], 'cc' => $lists['cc'], 'bcc' => $lists['bcc'],
			'subject' => $subject, 'body' => $body, 'in_reply_to' => $reply];
	}
}
