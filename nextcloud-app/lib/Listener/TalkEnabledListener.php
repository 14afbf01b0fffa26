<?php

declare(strict_types=1);

namespace OCA\Tamebi\Listener;

use OCA\Tamebi\Service\Talk\TalkBot;
use OCP\App\Events\AppEnableEvent;
use OCP\EventDispatcher\Event;
use OCP\EventDispatcher\IEventListener;
use Psr\Log\LoggerInterface;

/**
 * Talk enabled after Tamebi: the bot set up before (`occ tamebi:setup --talk`) is registered
 * again (the same as the repair step, RegisterTalkBot). Acts on no other app's enabling.
 * @template-implements IEventListener<AppEnableEvent>
 */
class TalkEnabledListener implements IEventListener {
	public function __construct(
		private TalkBot $talkBot,
		private LoggerInterface $logger,
	) {
	}

	public function handle(Event $event): void {
		if (!$event instanceof AppEnableEvent || $event->getAppId() !== 'spreed') {
			return;
		}
		try {
			$this->talkBot->refresh();
		} catch (\Throwable $e) {
			$this->logger->warning('Tamebi: could not register the Talk bot after Talk was enabled; run occ tamebi:setup --talk', ['exception' => $e]);
		}
	}
}
