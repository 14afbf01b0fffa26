<?php

declare(strict_types=1);

namespace OCA\Tamebi\Listener;

use OCP\AppFramework\Http\EmptyContentSecurityPolicy;
use OCP\EventDispatcher\Event;
use OCP\EventDispatcher\IEventListener;
use OCP\IURLGenerator;
use OCP\Security\CSP\AddContentSecurityPolicyEvent;

/**
 * Lets pages frame the app's frame route, and nothing else (issue #29). The island shows MCP Apps
 * in `<iframe src="<frame route>?…">`, on the Tamebi page and inside other apps' Smart Picker
 * (Talk, Text, Mail); Nextcloud's default page policy has no frame-src at all, so without this
 * those frames would be refused by `default-src 'none'`.
 * It must never allow more than that one route: the source is the absolute URL of
 * `tamebi.frame.show` (a path-bound CSP source), never the origin or 'self'. What runs inside a
 * frame is governed by the policy the frame route itself sends (FrameResponse).
 *
 * @template-implements IEventListener<Event>
 */
class FrameCspListener implements IEventListener {
	public function __construct(
		private IURLGenerator $urlGenerator,
	) {
	}

	public function handle(Event $event): void {
		if (!$event instanceof AddContentSecurityPolicyEvent) {
			return;
		}
		$policy = new EmptyContentSecurityPolicy();
		$policy->addAllowedFrameDomain($this->urlGenerator->linkToRouteAbsolute('tamebi.frame.show'));
		$event->addPolicy($policy);
	}
}
