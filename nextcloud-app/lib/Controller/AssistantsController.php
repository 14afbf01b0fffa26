<?php

declare(strict_types=1);

namespace OCA\Tamebi\Controller;

use OCA\Tamebi\AppInfo\Application;
use OCA\Tamebi\Http\OcsAnswers;
use OCA\Tamebi\Service\Registry\PersonalAssistants;
use OCA\Tamebi\Service\Registry\JsonBody;
use OCA\Tamebi\Service\Registry\RegistryError;
use OCA\Tamebi\Service\RequestBody;
use OCP\AppFramework\Http\Attribute\NoAdminRequired;
use OCP\AppFramework\Http\DataResponse;
use OCP\AppFramework\OCSController;
use OCP\IRequest;

/**
 * Every signed-in person's assistants (issue #30), /ocs/v2.php/apps/tamebi/api/v1/assistants:
 * GET (theirs, the operator's, and those shared with a group they are in), POST (a new one),
 * PUT|DELETE `{id}`, POST `{id}/share` with `{"group": gid}`. Acts as the session user only
 * (OcsAnswers::forUser); an OCSController with the CSRF check on, like the mail bridge.
 */
class AssistantsController extends OCSController {
	public function __construct(
		IRequest $request,
		private PersonalAssistants $assistants,
		private OcsAnswers $answers,
		private RequestBody $body,
	) {
		parent::__construct(Application::APP_ID, $request);
	}

	#[NoAdminRequired]
	public function index(): DataResponse {
		return $this->user(fn (string $uid): array => $this->assistants->list($uid, $this->request->getId()));
	}

	#[NoAdminRequired]
	public function create(): DataResponse {
		return $this->user(fn (string $uid): array => $this->assistants->create($uid, $this->json(), $this->request->getId()));
	}

	#[NoAdminRequired]
	public function update(string $id): DataResponse {
		return $this->user(fn (string $uid): array => $this->assistants->update($uid, $id, $this->json(), $this->request->getId()));
	}

	#[NoAdminRequired]
	public function destroy(string $id): DataResponse {
		return $this->user(fn (string $uid): array => $this->assistants->delete($uid, $id, $this->request->getId()));
	}

	#[NoAdminRequired]
	public function share(string $id): DataResponse {
		return $this->user(fn (string $uid): array => $this->assistants->share($uid, $id, $this->json()['group'] ?? null, $this->request->getId()));
	}

	/** @param callable(string): array<array-key, mixed> $route */
	private function user(callable $route): DataResponse {
		return $this->answers->forUser($route, RegistryError::class);
	}

	/** @return array<string, mixed> */
	private function json(): array {
		return JsonBody::read($this->body);
	}
}
