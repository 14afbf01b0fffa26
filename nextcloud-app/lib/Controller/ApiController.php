<?php

declare(strict_types=1);

namespace OCA\Tamebi\Controller;

use OCA\Tamebi\AppInfo\Application;
use OCA\Tamebi\Service\BodyGuard;
use OCA\Tamebi\Service\Relay;
use OCA\Tamebi\Service\RequestBody;
use OCP\AppFramework\Controller;
use OCP\AppFramework\Http\Attribute\NoAdminRequired;
use OCP\AppFramework\Http\Attribute\UseSession;
use OCP\AppFramework\Http\Response;
use OCP\IRequest;

/**
 * The island's API: each route forwards to the orchestrator's `/v1/...` twin (docs/api.md).
 * Session + CSRF protected (the island sends the request token as the `requesttoken` header).
 * #[UseSession] because renewing the user's token writes to the session; Nextcloud closes the
 * session when the controller returns, before a stream starts, so a long answer holds no lock.
 * It must never decide anything about permissions: it checks shape (G1: no uid in a body, a
 * well-formed id) and forwards.
 */
class ApiController extends Controller {
	public function __construct(
		IRequest $request,
		private Relay $relay,
		private RequestBody $body,
	) {
		parent::__construct(Application::APP_ID, $request);
	}

	#[NoAdminRequired]
	#[UseSession]
	public function chat(): Response {
		$body = '';
		return $this->relay->guard(function () use (&$body): void {
			$body = $this->body->read();
			BodyGuard::check($body);
		}) ?? $this->relay->stream('POST', '/v1/chat' . $this->relay->chatQuery(), $body);
	}

	#[NoAdminRequired]
	#[UseSession]
	public function resume(string $id): Response {
		return $this->relay->guard(fn () => BodyGuard::checkConversationId($id))
			?? $this->relay->stream('GET', '/v1/chat/' . $id . '/stream');
	}

	/** Stop pressed: the running reply of this conversation stops at once (204 also when none runs). */
	#[NoAdminRequired]
	#[UseSession]
	public function stopChat(string $id): Response {
		return $this->relay->guard(fn () => BodyGuard::checkConversationId($id))
			?? $this->relay->forward('POST', '/v1/chat/' . $id . '/stop');
	}

	#[NoAdminRequired]
	#[UseSession]
	public function conversations(): Response {
		return $this->relay->forward('GET', '/v1/conversations');
	}

	#[NoAdminRequired]
	#[UseSession]
	public function conversation(string $id): Response {
		return $this->relay->guard(fn () => BodyGuard::checkConversationId($id))
			?? $this->relay->forward('GET', '/v1/conversations/' . $id);
	}

	#[NoAdminRequired]
	#[UseSession]
	public function deleteConversation(string $id): Response {
		return $this->relay->guard(fn () => BodyGuard::checkConversationId($id))
			?? $this->relay->forward('DELETE', '/v1/conversations/' . $id);
	}

	#[NoAdminRequired]
	#[UseSession]
	public function toolsCall(): Response {
		return $this->forwardBody('/v1/apps/tools/call');
	}

	/** App-only tools with effects (mail send/draft): reached only by a click in the island's own DOM. */
	#[NoAdminRequired]
	#[UseSession]
	public function toolsDispatch(): Response {
		return $this->forwardBody('/v1/apps/tools/dispatch');
	}

	/** How a frame's tool request must be handled (relay, confirm first, refused): steers the island only. */
	#[NoAdminRequired]
	#[UseSession]
	public function toolsDescribe(): Response {
		return $this->forwardBody('/v1/apps/tools/describe');
	}

	/** The signed user's remembered facts. */
	#[NoAdminRequired]
	#[UseSession]
	public function memory(): Response {
		return $this->relay->forward('GET', '/v1/memory');
	}

	/** The person forgets one of their own facts (no approval: it is their own action). */
	#[NoAdminRequired]
	#[UseSession]
	public function forgetMemory(string $id): Response {
		return $this->relay->guard(fn () => BodyGuard::checkFactId($id))
			?? $this->relay->forward('DELETE', '/v1/memory/' . $id);
	}

	/** GDPR erasure of the signed user's conversations, summaries and memory (never anyone else's: the uid is signed). */
	#[NoAdminRequired]
	#[UseSession]
	public function eraseMyData(): Response {
		return $this->relay->forward('DELETE', '/v1/me/data');
	}

	/** The assistants the user may pick for a new conversation (name, description, tool patterns). */
	#[NoAdminRequired]
	#[UseSession]
	public function assistants(): Response {
		return $this->relay->forward('GET', $this->relay->withGroups('/v1/assistants'));
	}

	private function forwardBody(string $path): Response {
		$body = '';
		return $this->relay->guard(function () use (&$body): void {
			$body = $this->body->read();
			BodyGuard::check($body);
		}) ?? $this->relay->forward('POST', $this->relay->withGroups($path), $body);
	}
}
