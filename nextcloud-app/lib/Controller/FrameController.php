<?php

declare(strict_types=1);

namespace OCA\Tamebi\Controller;

use OCA\Tamebi\AppInfo\Application;
use OCA\Tamebi\Exception\ProxyError;
use OCA\Tamebi\Http\FrameResponse;
use OCA\Tamebi\Service\Orchestrator;
use OCA\Tamebi\Service\Relay;
use OCA\Tamebi\Service\TokenService;
use OCP\AppFramework\Controller;
use OCP\AppFramework\Http\Attribute\NoAdminRequired;
use OCP\AppFramework\Http\Attribute\NoCSRFRequired;
use OCP\AppFramework\Http\Attribute\UseSession;
use OCP\AppFramework\Http\Response;
use OCP\IRequest;
use OCP\IUserSession;

/**
 * Serves an MCP App's `ui://` document as a same-origin frame (never srcdoc), with exactly the
 * policy the orchestrator built from the document. No CSRF token: an iframe navigation cannot
 * send one, and the answer is only the user's own app document.
 * It must never serve a document that came without its policy (fail closed).
 */
class FrameController extends Controller {
	public function __construct(
		IRequest $request,
		private Orchestrator $orchestrator,
		private TokenService $tokens,
		private IUserSession $userSession,
		private Relay $relay,
	) {
		parent::__construct(Application::APP_ID, $request);
	}

	#[NoAdminRequired]
	#[NoCSRFRequired]
	#[UseSession]
	public function show(string $server = '', string $uri = '', string $conversation = ''): Response {
		try {
			self::checkTarget($server, $uri);
			// The conversation the frame is shown in, as the tool doors take it: the orchestrator
			// serves the document only if that conversation's assistant may use the server, and
			// refuses one for no conversation (403). Passed on as given, never chosen here.
			if ($conversation !== '' && preg_match('/^[A-Za-z0-9_-]{1,64}$/D', $conversation) !== 1) {
				throw ProxyError::badRequest('malformed conversation id');
			}
			$user = $this->userSession->getUser();
			if ($user === null) {
				throw ProxyError::upstream(401, 'no user in session');
			}
			$query = ['server' => $server, 'uri' => $uri];
			if ($conversation !== '') {
				$query['conversation'] = $conversation;
			}
			// With the person's groups: a conversation with a shared assistant shows its apps (issue #30).
			$path = $this->relay->withGroups('/v1/apps/resource?' . http_build_query($query, '', '&', PHP_QUERY_RFC3986));
			$reply = $this->orchestrator->send('GET', $path, $user->getUID(), '', $this->tokens->accessTokens(), $this->request->getId());
			if (!$reply->isSuccess()) {
				throw ProxyError::upstream($reply->status, "app resource answered {$reply->status}");
			}
			$policy = trim($reply->header('content-security-policy') ?? '');
			if ($policy === '') {
				throw ProxyError::upstream(502, 'app resource came without a Content-Security-Policy');
			}
			return new FrameResponse($reply->body, $policy);
		} catch (ProxyError $e) {
			return $this->relay->error($e);
		}
	}

	public static function checkTarget(string $server, string $uri): void {
		if (preg_match('/^[A-Za-z0-9_.-]{1,64}$/D', $server) !== 1) {
			throw ProxyError::badRequest('malformed MCP server name');
		}
		if (!str_starts_with($uri, 'ui://') || strlen($uri) > 2048 || preg_match('/[\x00-\x20\x7f]/', $uri) === 1) {
			throw ProxyError::badRequest('malformed ui:// resource URI');
		}
	}
}
