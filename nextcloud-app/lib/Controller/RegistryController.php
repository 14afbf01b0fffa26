<?php

declare(strict_types=1);

namespace OCA\Tamebi\Controller;

use OCA\Tamebi\AppInfo\Application;
use OCA\Tamebi\Http\OcsAnswers;
use OCA\Tamebi\Service\Registry\AdminRegistry;
use OCA\Tamebi\Service\Registry\JsonBody;
use OCA\Tamebi\Service\Registry\RegistryError;
use OCA\Tamebi\Service\RequestBody;
use OCP\AppFramework\Http\DataResponse;
use OCP\AppFramework\OCSController;
use OCP\IRequest;

/**
 * The admin OCS routes of the registry (issue #30), /ocs/v2.php/apps/tamebi/api/v1/admin/...:
 * `servers` (GET, POST), `servers/{name}` (PUT, DELETE), `assistants` (GET, POST),
 * `assistants/{name}` (PUT, DELETE), `assistants/{name}/approve` (POST), `policy` (GET, PUT).
 * JSON bodies with the TOML file's field names (`name`, `description`, `instructions`, `model`,
 * `tools`) and TAMEBI_MCP_SERVERS' (`name`, `url`, `auth`, `trust`).
 *
 * No #[NoAdminRequired] on any method: Nextcloud refuses non-admins before this runs (403), and
 * OcsAnswers::forAdmin asks IGroupManager again before anything is signed (two locks).
 */
class RegistryController extends OCSController {
	public function __construct(
		IRequest $request,
		private AdminRegistry $registry,
		private OcsAnswers $answers,
		private RequestBody $body,
	) {
		parent::__construct(Application::APP_ID, $request);
	}

	public function servers(): DataResponse {
		return $this->admin(fn (string $uid): array => $this->registry->servers($uid, $this->rid()));
	}

	public function createServer(): DataResponse {
		return $this->admin(fn (string $uid): array => $this->registry->createServer($uid, $this->json(), $this->rid()));
	}

	public function updateServer(string $name): DataResponse {
		return $this->admin(fn (string $uid): array => $this->registry->updateServer($uid, $name, $this->json(), $this->rid()));
	}

	public function deleteServer(string $name): DataResponse {
		return $this->admin(fn (string $uid): array => $this->registry->deleteServer($uid, $name, $this->rid()));
	}

	public function assistants(): DataResponse {
		return $this->admin(fn (string $uid): array => $this->registry->assistants($uid, $this->rid()));
	}

	public function createAssistant(): DataResponse {
		return $this->admin(fn (string $uid): array => $this->registry->createAssistant($uid, $this->json(), $this->rid()));
	}

	public function updateAssistant(string $name): DataResponse {
		return $this->admin(fn (string $uid): array => $this->registry->updateAssistant($uid, $name, $this->json(), $this->rid()));
	}

	public function deleteAssistant(string $name): DataResponse {
		return $this->admin(fn (string $uid): array => $this->registry->deleteAssistant($uid, $name, $this->rid()));
	}

	/** Body `{"version": n}`: the version of the shared personal assistant the admin looked at. */
	public function approve(string $name): DataResponse {
		return $this->admin(fn (string $uid): array => $this->registry->approve($uid, $name, $this->json()['version'] ?? null, $this->rid()));
	}

	public function policy(): DataResponse {
		return $this->admin(fn (string $uid): array => $this->registry->policy($uid, $this->rid()));
	}

	public function setPolicy(): DataResponse {
		return $this->admin(fn (string $uid): array => $this->registry->setPolicy($uid, $this->json(), $this->rid()));
	}

	/** @param callable(string): array<array-key, mixed> $route */
	private function admin(callable $route): DataResponse {
		return $this->answers->forAdmin($route, RegistryError::class);
	}

	private function rid(): string {
		return $this->request->getId();
	}

	/** @return array<string, mixed> */
	private function json(): array {
		return JsonBody::read($this->body);
	}
}
