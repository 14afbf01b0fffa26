<?php

declare(strict_types=1);

namespace OCA\Tamebi\Settings;

use OCA\Tamebi\AppInfo\Application;
use OCA\Tamebi\Service\AdminStatus;
use OCA\Tamebi\Service\AppSettings;
use OCA\Tamebi\Service\Checks;
use OCP\AppFramework\Http\TemplateResponse;
use OCP\IURLGenerator;
use OCP\Settings\ISettings;
use OCP\Util;

/**
 * Admin settings: where the orchestrator and MCP server are, whether the instance checks pass,
 * and what the orchestrator reports (AdminStatus): its assistants with their servers and tool
 * counts, and per MCP server whether it answers and how many tools it offers. Below that the
 * admin bundle (`js/tamebi-admin.js`, built from island/src/admin) manages the registry of
 * issue #30 (servers, assistants, approvals, the policy for personal assistants) through the
 * app's OCS admin routes; this class only gives it the OCS base. Secrets are never shown here.
 */
class Admin implements ISettings {
	public function __construct(
		private AppSettings $settings,
		private Checks $checks,
		private AdminStatus $status,
		private IURLGenerator $urls,
	) {
	}

	public function getForm(): TemplateResponse {
		// The registry's editor; addScript also brings the app's translations for it.
		Util::addScript(Application::APP_ID, 'tamebi-admin');
		Util::addStyle(Application::APP_ID, 'tamebi-admin');
		return new TemplateResponse(Application::APP_ID, 'admin', [
			'orchestratorUrl' => $this->settings->orchestratorUrl(),
			'mcpUrl' => $this->settings->mcpUrl(),
			'checks' => $this->checks->instance(),
			'orchestrator' => $this->status->fetch(),
			'ocsBase' => $this->urls->getWebroot() . '/ocs/v2.php/apps/' . Application::APP_ID . '/api/v1',
		], '');
	}

	/** Nextcloud's "Artificial Intelligence" admin section. */
	public function getSection(): string {
		return 'ai';
	}

	public function getPriority(): int {
		return 50;
	}
}
