<?php

declare(strict_types=1);

namespace OCA\Tamebi\Http;

use OCP\AppFramework\Http;
use OCP\AppFramework\Http\EmptyContentSecurityPolicy;
use OCP\AppFramework\Http\Response;

/**
 * An MCP App frame document, served with exactly the Content-Security-Policy the orchestrator
 * built from that document (script/style hashes, `connect-src 'none'`, `frame-ancestors 'self'`).
 *
 * Nextcloud's CSP machinery must not touch it: its default policy (nonce + strict-dynamic) would
 * block the app's inline script, and anything it adds would widen what a frame may load. So this
 * response reports an EmptyContentSecurityPolicy (which makes the CSP middleware leave it alone),
 * ignores any policy object set on it, and replaces the header on the way out.
 * It must never serve a document without its policy; the controller refuses that case.
 */
class FrameResponse extends Response {
	public function __construct(
		private string $html,
		private string $policy,
	) {
		parent::__construct(Http::STATUS_OK);
		$this->addHeader('Content-Type', 'text/html; charset=utf-8');
	}

	public function render(): string {
		return $this->html;
	}

	/** Ignored on purpose: the policy belongs to the document, not to Nextcloud. */
	public function setContentSecurityPolicy(EmptyContentSecurityPolicy $csp) {
		return $this;
	}

	public function getContentSecurityPolicy() {
		return new EmptyContentSecurityPolicy();
	}

	public function getHeaders() {
		$headers = [];
		foreach (parent::getHeaders() as $name => $value) {
			if (strcasecmp((string)$name, 'Content-Security-Policy') !== 0) {
				$headers[$name] = $value;
			}
		}
		$headers['Content-Security-Policy'] = $this->policy;
		return $headers;
	}

	public function policy(): string {
		return $this->policy;
	}
}
