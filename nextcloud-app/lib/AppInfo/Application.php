<?php

declare(strict_types=1);

namespace OCA\Tamebi\AppInfo;

use OCA\Tamebi\Listener\TalkEnabledListener;
use OCP\App\Events\AppEnableEvent;
use OCP\AppFramework\App;
use OCP\AppFramework\Bootstrap\IBootContext;
use OCP\AppFramework\Bootstrap\IBootstrap;
use OCP\AppFramework\Bootstrap\IRegistrationContext;

/**
 * The app's entry point. Everything is wired by the DI container from constructor types;
 * commands and the admin settings are declared in appinfo/info.xml.
 * It must never register anything that runs on other apps' requests: Tamebi only acts when
 * the signed-in user talks to it (or Talk calls its bot webhook). The one listener is for
 * Talk being enabled, to register the Talk bot again (TalkEnabledListener).
 */
class Application extends App implements IBootstrap {
	public const APP_ID = 'tamebi';

	public function __construct(array $urlParams = []) {
		parent::__construct(self::APP_ID, $urlParams);
	}

	public function register(IRegistrationContext $context): void {
		$context->registerEventListener(AppEnableEvent::class, TalkEnabledListener::class);
	}

	public function boot(IBootContext $context): void {
	}
}
