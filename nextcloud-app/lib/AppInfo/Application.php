<?php

declare(strict_types=1);

namespace OCA\Tamebi\AppInfo;

use OCA\Tamebi\Listener\FrameCspListener;
use OCA\Tamebi\Listener\RenderReferenceListener;
use OCA\Tamebi\Listener\TalkEnabledListener;
use OCA\Tamebi\Reference\TamebiReferenceProvider;
use OCP\App\Events\AppEnableEvent;
use OCP\AppFramework\App;
use OCP\AppFramework\Bootstrap\IBootContext;
use OCP\AppFramework\Bootstrap\IBootstrap;
use OCP\AppFramework\Bootstrap\IRegistrationContext;
use OCP\Collaboration\Reference\RenderReferenceEvent;
use OCP\Security\CSP\AddContentSecurityPolicyEvent;

/**
 * The app's entry point. Everything is wired by the DI container from constructor types;
 * commands and the admin settings are declared in appinfo/info.xml.
 * It must never register anything that acts on other apps' requests: Tamebi only acts when
 * the signed-in user talks to it (or Talk calls its bot webhook). What other apps' pages get is
 * the Smart Picker's "Ask Tamebi" entry (issue #29): the island's bundle is loaded where the
 * picker can open, and it does nothing until the person picks Tamebi there. The one other
 * listener is for Talk being enabled, to register the Talk bot again (TalkEnabledListener).
 */
class Application extends App implements IBootstrap {
	public const APP_ID = 'tamebi';

	public function __construct(array $urlParams = []) {
		parent::__construct(self::APP_ID, $urlParams);
	}

	public function register(IRegistrationContext $context): void {
		$context->registerReferenceProvider(TamebiReferenceProvider::class);
		$context->registerEventListener(RenderReferenceEvent::class, RenderReferenceListener::class);
		// MCP Apps frames on the Tamebi page and in the picker: only the frame route may be framed.
		$context->registerEventListener(AddContentSecurityPolicyEvent::class, FrameCspListener::class);
		$context->registerEventListener(AppEnableEvent::class, TalkEnabledListener::class);
	}

	public function boot(IBootContext $context): void {
	}
}
