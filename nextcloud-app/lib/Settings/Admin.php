<?php

declare(strict_types=1);

namespace OCA\Tamebi\Settings;

use OCA\Tamebi\AppInfo\Application;
use OCA\Tamebi\Service\AdminStatus;
use OCA\Tamebi\Service\AppSettings;
use OCA\Tamebi\Service\Checks;
use OCP\AppFramework\Http\TemplateResponse;
use OCP\Settings\ISettings;

/**
 * Admin settings: where the orchestrator and MCP server are, whether the instance checks pass,
 * and what the orchestrator reports (AdminStatus): its assistants with their servers and tool
 * counts, and per MCP server whether it answers and how many tools it offers. Read-only on
 * purpose: changes go through `occ tamebi:setup` and the orchestrator's own configuration
 * (TAMEBI_ASSISTANTS). Secrets are never shown here.
 */
class Admin implements ISettings {
	public function __construct(
		private AppSettings $settings,
		private Checks $checks,
		private AdminStatus $status,
	) {
	}

	public function getForm(): TemplateResponse {
		return new TemplateResponse(Application::APP_ID, 'admin', [
			'orchestratorUrl' => $this->settings->orchestratorUrl(),
			'mcpUrl' => $this->settings->mcpUrl(),
			'checks' => $this->checks->instance(),
			'orchestrator' => $this->status->fetch(),
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
