<?php

declare(strict_types=1);

namespace OCA\Tamebi\Service;

use OCA\Tamebi\Exception\ProxyError;
use OCA\Tamebi\Http\RelayResponse;
use OCP\AppFramework\Http;
use OCP\AppFramework\Http\DataDisplayResponse;
use OCP\AppFramework\Http\JSONResponse;
use OCP\AppFramework\Http\Response;
use OCP\IL10N;
use OCP\IRequest;
use OCP\IUserSession;
use Psr\Log\LoggerInterface;

/**
 * Forwards one browser request to its orchestrator twin and turns the answer into a response.
 * This is where the uid is read (G1: from IUserSession only), where the user's token is attached,
 * and where every failure becomes the generic error shape (internals go to the log only; of an
 * orchestrator's error body only its refusal code is read, and ErrorShape checks it).
 * It must never send anything when the request is refused; checks run before the first byte leaves.
 */
class Relay {
	/** Tells the island whether the user's workspace is reachable (no token → no workspace tools). */
	public const WORKSPACE_HEADER = 'X-Tamebi-Workspace';
	private const ERROR_LOG_BYTES = 2048;

	public function __construct(
		private Orchestrator $orchestrator,
		private TokenService $tokens,
		private IUserSession $userSession,
		private IRequest $request,
		private LoggerInterface $logger,
		private IL10N $l,
		private ?Registry\MemberOf $memberOf = null,
	) {
	}

	/**
	 * The person's Nextcloud language as a BCP 47 tag (`de`, `de-DE` for Nextcloud's `de_DE`,
	 * `sr-Latn` for `sr@latin`), or null for a code that does not become one. The app's IL10N
	 * is in the language IFactory::findLanguage chose for them (their core/lang setting, else
	 * the browser's, else the instance default).
	 */
	public function language(): ?string {
		$tag = str_replace(['@latin', '_'], ['-Latn', '-'], $this->l->getLanguageCode());
		// RFC 5646's language[-script][-region][-variant…], exactly what the orchestrator accepts
		// (language-tags); a looser pattern here would turn every chat turn of such a person into
		// a 400 there, where sending no language only costs them the answer's language.
		$pattern = '/^[A-Za-z]{2,3}(?:-[A-Za-z]{4})?(?:-(?:[A-Za-z]{2}|[0-9]{3}))?(?:-(?:[A-Za-z0-9]{5,8}|[0-9][A-Za-z0-9]{3}))*$/';
		return strlen($tag) <= 35 && preg_match($pattern, $tag) === 1 ? $tag : null;
	}

	/**
	 * The query of a chat turn: the signed `lang` parameter (docs/api.md), so the model answers
	 * in the person's language (none when the language has no BCP 47 form), and their groups.
	 */
	public function chatQuery(): string {
		$language = $this->language();
		$query = $language === null ? '' : '?' . http_build_query(['lang' => $language]);
		// The person's groups (issue #30): a conversation with a shared assistant runs only while
		// Nextcloud says they are in its group. Signed with the rest of the query.
		return $this->memberOf?->withGroups($query) ?? $query;
	}

	/** `$path` with the person's groups as signed `group` parameters (issue #30). */
	public function withGroups(string $path): string {
		return $this->memberOf?->withGroups($path) ?? $path;
	}

	/** A buffered request: JSON (or empty) answers, passed through on success. */
	public function forward(string $method, string $path, string $body = ''): Response {
		try {
			[$uid, $tokens] = $this->identity();
			$reply = $this->orchestrator->send($method, $path, $uid, $body, $tokens, $this->request->getId());
			if (!$reply->isSuccess()) {
				throw ProxyError::upstream($reply->status, "orchestrator $method $path answered {$reply->status}: "
					. substr($reply->body, 0, self::ERROR_LOG_BYTES), Orchestrator::retryAfter($reply), ErrorShape::codeOf($reply->body));
			}
			$response = $reply->status === Http::STATUS_NO_CONTENT
				? new Response(Http::STATUS_NO_CONTENT)
				: new DataDisplayResponse($reply->body, $reply->status,
					['Content-Type' => $reply->header('content-type') ?? 'application/json']);
			return $this->mark($response, $tokens);
		} catch (ProxyError $e) {
			return $this->error($e);
		}
	}

	/** A streamed request: the SSE answer is relayed chunk by chunk. */
	public function stream(string $method, string $path, string $body = ''): Response {
		try {
			[$uid, $tokens] = $this->identity();
			$upstream = $this->orchestrator->stream($method, $path, $uid, $body, $tokens, $this->request->getId());
			$status = $upstream->status();
			if ($status >= 300) {
				$detail = $upstream->drain(self::ERROR_LOG_BYTES);
				$upstream->close();
				throw ProxyError::upstream($status, "orchestrator stream $method $path answered $status: $detail",
					Orchestrator::retryAfter($upstream), ErrorShape::codeOf($detail));
			}
			if ($status === Http::STATUS_NO_CONTENT) {
				$upstream->close();
				return $this->mark(new Response(Http::STATUS_NO_CONTENT), $tokens);
			}
			return $this->mark(new RelayResponse($upstream, $this->request->getId(), $this->logger, $this->l), $tokens);
		} catch (ProxyError $e) {
			return $this->error($e);
		}
	}

	/** Runs a check that may refuse the request, turning a refusal into the error response. */
	public function guard(callable $check): ?Response {
		try {
			$check();
			return null;
		} catch (ProxyError $e) {
			return $this->error($e);
		}
	}

	public function error(ProxyError $e): JSONResponse {
		$requestId = $this->request->getId();
		$context = ['app' => 'tamebi', 'requestId' => $requestId, 'status' => $e->status()];
		if ($e->isServerSide()) {
			$this->logger->error('Tamebi: ' . $e->getMessage(), $context + ['exception' => $e]);
		} else {
			$this->logger->info('Tamebi: refused: ' . $e->getMessage(), $context);
		}
		$status = ErrorShape::status($e->status());
		$response = new JSONResponse(ErrorShape::body($this->l, $status, $requestId, $e->refusalCode(), $e->retryAfter()), $status);
		$response->addHeader('X-Request-Id', $requestId);
		if ($e->retryAfter() !== null) {
			$response->addHeader('Retry-After', (string)$e->retryAfter());
		}
		return $response;
	}

	/** @return array{0: string, 1: array<string, string>} the session's uid and the user's tokens by MCP server */
	private function identity(): array {
		$user = $this->userSession->getUser();
		if ($user === null) {
			throw ProxyError::upstream(Http::STATUS_UNAUTHORIZED, 'no user in session');
		}
		return [$user->getUID(), $this->tokens->accessTokens()];
	}

	/** @param array<string, string> $tokens */
	private function mark(Response $response, array $tokens): Response {
		$response->addHeader(self::WORKSPACE_HEADER, $tokens === [] ? 'disconnected' : 'connected');
		return $response;
	}
}
