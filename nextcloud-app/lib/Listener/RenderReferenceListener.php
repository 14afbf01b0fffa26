<?php

declare(strict_types=1);

namespace OCA\Tamebi\Listener;

use OCA\Tamebi\Service\IslandState;
use OCP\Collaboration\Reference\RenderReferenceEvent;
use OCP\EventDispatcher\Event;
use OCP\EventDispatcher\IEventListener;

/**
 * Loads the island bundle on pages that can open the Smart Picker (Nextcloud dispatches
 * RenderReferenceEvent on them: Talk, Text, Collectives, Mail), so "Ask Tamebi" finds its
 * picker element. The bundle registers the element and does nothing else until the person
 * picks Tamebi.
 * It must never load anything for a page without a signed-in person: the picker acts as that
 * person, in their own session, and there is nobody to act as.
 *
 * @template-implements IEventListener<Event>
 */
class RenderReferenceListener implements IEventListener {
	public function __construct(
		private IslandState $island,
	) {
	}

	public function handle(Event $event): void {
		if (!$event instanceof RenderReferenceEvent || !$this->island->hasUser()) {
			return;
		}
		$this->island->load();
	}
}
