<?php

declare(strict_types=1);

namespace OCA\Tamebi\Controller;

use OCA\Tamebi\AppInfo\Application;
use OCA\Tamebi\Service\AdminStatus;
use OCP\AppFramework\Controller;
use OCP\AppFramework\Http\JSONResponse;
use OCP\IRequest;

/**
 * `GET /api/admin/status`: the orchestrator's configuration status as JSON, for admins.
 * No #[NoAdminRequired]: Nextcloud's middleware refuses non-admins before this runs, and
 * AdminStatus asks IGroupManager again before it signs anything (two locks, one key).
 */
class AdminController extends Controller {
	public function __construct(
		IRequest $request,
		private AdminStatus $status,
	) {
		parent::__construct(Application::APP_ID, $request);
	}

	public function status(): JSONResponse {
		$result = $this->status->fetch($this->request->getId());
		if (!$result['ok']) {
			return new JSONResponse(['error' => ['message' => $result['error'], 'requestId' => $this->request->getId()]], $result['code']);
		}
		return new JSONResponse($result['status']);
	}
}
