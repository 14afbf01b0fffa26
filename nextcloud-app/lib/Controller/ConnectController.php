<?php

declare(strict_types=1);

namespace OCA\Tamebi\Controller;

use OCA\Tamebi\AppInfo\Application;
use OCA\Tamebi\Exception\ProxyError;
use OCA\Tamebi\Service\OidcFlow;
use OCA\Tamebi\Service\TokenService;
use OCP\AppFramework\Controller;
use OCP\AppFramework\Http\Attribute\NoAdminRequired;
use OCP\AppFramework\Http\Attribute\NoCSRFRequired;
use OCP\AppFramework\Http\Attribute\UseSession;
use OCP\AppFramework\Http\RedirectResponse;
use OCP\IRequest;
use OCP\ISession;
use OCP\IURLGenerator;
use Psr\Log\LoggerInterface;

/**
 * The visible authorization flow, for the one time it cannot be silent: the user has not yet
 * consented to the Tamebi client. The browser goes to the oidc app's consent page and comes
 * back to the callback with a code; after that, renewal is silent (TokenService).
 * It must never accept a code whose state it did not issue in this session.
 */
class ConnectController extends Controller {
	private const PENDING_KEY = 'tamebi_connect';

	public function __construct(
		IRequest $request,
		private ISession $session,
		private OidcFlow $flow,
		private TokenService $tokens,
		private IURLGenerator $urlGenerator,
		private LoggerInterface $logger,
	) {
		parent::__construct(Application::APP_ID, $request);
	}

	#[NoAdminRequired]
	#[NoCSRFRequired]
	#[UseSession]
	public function start(): RedirectResponse {
		$pkce = OidcFlow::newPkce();
		$this->session->set(self::PENDING_KEY, ['verifier' => $pkce['verifier'], 'state' => $pkce['state']]);
		$base = rtrim($this->urlGenerator->getAbsoluteURL('/'), '/') . '/';
		return new RedirectResponse($this->flow->authorizeUrl($base, $pkce, $this->flow->defaultResource()));
	}

	#[NoAdminRequired]
	#[NoCSRFRequired]
	#[UseSession]
	public function callback(string $code = '', string $state = ''): RedirectResponse {
		$pending = $this->session->get(self::PENDING_KEY);
		$this->session->remove(self::PENDING_KEY);
		if (is_array($pending) && $code !== '' && is_string($pending['state'] ?? null)
			&& hash_equals($pending['state'], $state) && is_string($pending['verifier'] ?? null)) {
			try {
				$this->tokens->store($this->flow->exchangeCode($code, $pending['verifier'], $this->flow->defaultResource()));
			} catch (ProxyError $e) {
				$this->logger->warning('Tamebi: connecting workspace failed: ' . $e->getMessage(), ['app' => 'tamebi']);
			}
		}
		return new RedirectResponse($this->urlGenerator->linkToRoute('tamebi.page.index'));
	}
}
