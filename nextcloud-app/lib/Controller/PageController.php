<?php

declare(strict_types=1);

namespace OCA\Tamebi\Controller;

use OCA\Tamebi\AppInfo\Application;
use OCA\Tamebi\Service\IslandState;
use OCP\AppFramework\Controller;
use OCP\AppFramework\Http\Attribute\NoAdminRequired;
use OCP\AppFramework\Http\Attribute\NoCSRFRequired;
use OCP\AppFramework\Http\Attribute\UseSession;
use OCP\AppFramework\Http\TemplateResponse;
use OCP\IRequest;

/**
 * The Tamebi page: the island's mount point, with its bundle and configuration (IslandState).
 * It must never put a token or secret into the page.
 */
class PageController extends Controller {
	public function __construct(
		IRequest $request,
		private IslandState $island,
	) {
		parent::__construct(Application::APP_ID, $request);
	}

	#[NoAdminRequired]
	#[NoCSRFRequired]
	#[UseSession]
	public function index(): TemplateResponse {
		$this->island->load();
		return new TemplateResponse(Application::APP_ID, 'main');
	}
}
