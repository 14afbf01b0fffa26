<?php

declare(strict_types=1);

namespace OCA\Tamebi\Service\Talk;

use OCA\Tamebi\Exception\ProxyError;
use OCA\Tamebi\Service\Orchestrator;
use OCP\IL10N;
use OCP\IURLGenerator;
use Psr\Log\LoggerInterface;

/**
 * What happens after a webhook was answered: the one reply in the room.
 *
 * A turn goes to the orchestrator's `POST /v1/talk/turn` signed for the person who addressed
 * the bot (G1) and with NO credentials: no token of anyone's is sent, so no workspace tool can
 * exist in it (docs/talk.md). The answer is posted with a "Continue in Tamebi" link that opens
 * the person's own Tamebi with the question filled in, where their authority applies.
 * Failures post one short reply with the request id and nothing of what went wrong.
 */
class RoomTurns {
	/** Longest question put into the deep link (the page's URL must stay reasonable). */
	private const MAX_PREFILL = 1000;

	public function __construct(
		private Orchestrator $orchestrator,
		private BotReplies $replies,
		private IURLGenerator $urls,
		private IL10N $l10n,
		private LoggerInterface $logger,
	) {
	}

	public function reply(Incoming $incoming): void {
		match ($incoming->kind) {
			'guest' => $this->replies->post($incoming->token, $incoming->messageId,
				$this->l10n->t('Tamebi answers signed-in users only.')),
			'limited' => $this->replies->post($incoming->token, $incoming->messageId, $incoming->limit === 'room'
				? $this->l10n->t('Tamebi is answering a lot of questions in this conversation right now. Please ask again in a minute.')
				: $this->l10n->t('You have asked Tamebi several questions in a short time. Please wait a minute before the next one.')),
			'turn' => $this->turn($incoming),
			default => null,
		};
	}

	private function turn(Incoming $incoming): void {
		if ($incoming->question === '') {
			$this->replies->post($incoming->token, $incoming->messageId,
				$this->l10n->t('Ask your question after my name, for example: @Tamebi what is a good agenda for a kick-off meeting?'));
			return;
		}
		$requestId = 'talk-' . bin2hex(random_bytes(8));
		$body = json_encode(['room' => $incoming->token, 'message' => $incoming->question], JSON_THROW_ON_ERROR);
		try {
			// G1: signed for the person who wrote the message; [] = no credentials at all.
			$reply = $this->orchestrator->send('POST', '/v1/talk/turn', $incoming->uid, $body, [], $requestId);
		} catch (ProxyError $e) {
			$this->logger->error('Tamebi: room turn {requestId} could not reach the orchestrator: {error}', ['requestId' => $requestId, 'error' => $e->getMessage()]);
			$this->failed($incoming, $requestId);
			return;
		}
		$data = json_decode($reply->body, true);
		if ($reply->status === 429) {
			$this->replies->post($incoming->token, $incoming->messageId,
				$this->l10n->t('Tamebi is busy right now. Please ask again in a minute.'));
			return;
		}
		$text = is_array($data) && is_string($data['text'] ?? null) ? trim($data['text']) : '';
		if ($text === '' && $reply->status === 200 && ($data['wantedTools'] ?? false) === true) {
			// The model reached for a tool (none is offered in a room): the question needs the person's own access.
			$text = $this->l10n->t('Tamebi cannot look at files, calendars, contacts, boards or mail from a Talk room. Continue in your own Tamebi to do this with your own access.');
		}
		if ($reply->status !== 200 || $text === '') {
			$this->logger->error('Tamebi: room turn {requestId} failed with HTTP {status}', ['requestId' => $requestId, 'status' => $reply->status]);
			$this->failed($incoming, $requestId);
			return;
		}
		$this->replies->post($incoming->token, $incoming->messageId, $text . "\n\n" . $this->continueLink($incoming->question));
	}

	private function failed(Incoming $incoming, string $requestId): void {
		$this->replies->post($incoming->token, $incoming->messageId,
			$this->l10n->t('Sorry, Tamebi could not answer this time. Request ID: %s', [$requestId]));
	}

	/** "Continue in Tamebi": the person's own Tamebi page with the question filled in (not sent). */
	public function continueLink(string $question): string {
		$prefill = mb_substr($question, 0, self::MAX_PREFILL);
		$url = $this->urls->linkToRouteAbsolute('tamebi.page.index') . '?' . http_build_query(['prefill' => $prefill], '', '&', PHP_QUERY_RFC3986);
		return '[' . $this->l10n->t('Continue in Tamebi') . '](' . $url . ')';
	}
}
