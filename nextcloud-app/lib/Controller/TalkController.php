<?php

declare(strict_types=1);

namespace OCA\Tamebi\Controller;

use OCA\Tamebi\Http\AfterResponse;
use OCA\Tamebi\Service\RequestBody;
use OCA\Tamebi\Service\Talk\RoomTurns;
use OCA\Tamebi\Service\Talk\Webhook;
use OCP\AppFramework\Http\Attribute\PublicPage;
use OCP\AppFramework\Http\DataResponse;
use OCP\AppFramework\OCSController;
use OCP\IRequest;

/**
 * `POST /ocs/v2.php/apps/tamebi/api/v1/talk/webhook`: where Talk sends every message of a
 * conversation the Tamebi bot is enabled in.
 *
 * The one deliberate #[PublicPage] of the app (docs/nextcloud-app.md): Talk calls it without a
 * user, so it proves itself by the bot's signature over the raw body (Webhook). The CSRF check
 * stays on: Talk sends `OCS-APIRequest: true`. It answers at once; the reply to the room is
 * made after the answer has gone (AfterResponse), because Talk holds the person's message until
 * we answer (5 s timeout).
 */
class TalkController extends OCSController {
	public function __construct(
		string $appName,
		IRequest $request,
		private Webhook $webhook,
		private RoomTurns $turns,
		private AfterResponse $after,
		private RequestBody $body,
	) {
		parent::__construct($appName, $request);
	}

	#[PublicPage]
	public function webhook(): DataResponse {
		$incoming = $this->webhook->receive($this->body->read(),
			$this->request->getHeader('X-Nextcloud-Talk-Random'), $this->request->getHeader('X-Nextcloud-Talk-Signature'));
		if ($incoming->kind === 'refused') {
			return new DataResponse(['error' => 'unauthorized', 'message' => 'The webhook signature is not valid.'], 401);
		}
		if ($incoming->needsReply()) {
			$this->after->run(fn () => $this->turns->reply($incoming));
		}
		return new DataResponse([], 200);
	}
}
