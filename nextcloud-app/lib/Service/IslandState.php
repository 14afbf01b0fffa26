<?php

declare(strict_types=1);

namespace OCA\Tamebi\Service;

use OCA\Tamebi\AppInfo\Application;
use OCP\AppFramework\Services\IInitialState;
use OCP\IConfig;
use OCP\IURLGenerator;
use OCP\IUserSession;
use OCP\Util;

/**
 * The island's configuration and bundle, for every page that shows it: the Tamebi page, and any
 * page whose Smart Picker may open Tamebi (issue #29, RenderReferenceListener).
 * It must never put a token or secret into the page: the island only learns whether workspace
 * access is connected.
 */
class IslandState {
	public const INITIAL_STATE_KEY = 'tamebi-config';

	public function __construct(
		private IUserSession $userSession,
		private IInitialState $initialState,
		private IURLGenerator $urlGenerator,
		private TokenService $tokens,
		private IConfig $config,
		private ?Registry\MemberOf $memberOf = null,
	) {
	}

	/** Hands the page the island's configuration and loads its bundle. */
	public function load(): void {
		$this->initialState->provideInitialState(self::INITIAL_STATE_KEY, $this->config());
		// addScript also adds the app's translations for the person's language (l10n/<lang>.js,
		// through Util::addTranslations), which the island's t() reads; Nextcloud's page carries
		// the language and locale (<html lang data-locale>) and window.firstDay itself.
		Util::addScript(Application::APP_ID, 'tamebi-island');
		Util::addStyle(Application::APP_ID, 'tamebi-island');
	}

	/** @return array<string, mixed> */
	public function config(): array {
		$user = $this->userSession->getUser();
		// Built from routes so a sub-path install or one without pretty URLs still works;
		// on a standard install these are "/apps/tamebi/api" and "/apps/tamebi/frame".
		$conversations = $this->urlGenerator->linkToRoute('tamebi.api.conversations');
		return [
			'apiBase' => substr($conversations, 0, -strlen('/conversations')),
			'frameUrl' => $this->urlGenerator->linkToRoute('tamebi.frame.show'),
			'connectUrl' => $this->urlGenerator->linkToRoute('tamebi.connect.start'),
			// The app's OCS routes (a person's own assistants, issue #30) under Nextcloud's webroot.
			'ocsBase' => $this->urlGenerator->getWebroot() . '/ocs/v2.php/apps/' . Application::APP_ID . '/api/v1',
			'user' => [
				'uid' => $user?->getUID() ?? '',
				'displayName' => $user?->getDisplayName() ?? '',
			],
			'workspaceConnected' => $this->tokens->isConnected(),
		] + $this->timeZone($user?->getUID()) + $this->groups();
	}

	/**
	 * The person's groups (IGroupManager's answer now), offered when they propose one of their
	 * assistants to a group (issue #30); the orchestrator still takes groups only from the signed
	 * query of each request, so this list decides nothing.
	 * @return array{groups?: list<string>}
	 */
	private function groups(): array {
		$groups = $this->memberOf?->groupIds() ?? [];
		return $groups === [] ? [] : ['groups' => $groups];
	}

	/** Whether someone is signed in (a page without a person gets no island). */
	public function hasUser(): bool {
		return $this->userSession->getUser() !== null;
	}

	/**
	 * The person's time zone from their settings (core/timezone, which Nextcloud keeps from their
	 * browser), so the island and the frames show times in it; none when unset or not a zone.
	 * @return array{timeZone?: string}
	 */
	private function timeZone(?string $uid): array {
		$zone = $uid === null ? '' : (string)$this->config->getUserValue($uid, 'core', 'timezone', '');
		return in_array($zone, \DateTimeZone::listIdentifiers(\DateTimeZone::ALL_WITH_BC), true) ? ['timeZone' => $zone] : [];
	}
}
