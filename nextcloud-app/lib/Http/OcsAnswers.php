<?php

declare(strict_types=1);

namespace OCA\Tamebi\Http;

use OCA\Tamebi\AppInfo\Application;
use OCP\AppFramework\Http\DataResponse;
use OCP\IGroupManager;
use OCP\IUserSession;
use Psr\Log\LoggerInterface;

/**
 * The one shape of an answer on the app's OCS routes (/ocs/v2.php/apps/tamebi/api/v1/...), so
 * that every OCS controller is a list of thin methods: resolve the session user, run the route as
 * that user, and turn every failure into `{"error": code, "message": ...}` with its status.
 *
 * It owns: who the caller is (Nextcloud's session user, which user_oidc sets from a bearer token;
 * never a uid from the request), the second admin check of admin routes, and the logging of 5xx
 * causes. It must never: answer with a backend's own words, or act for anyone but the session user.
 *
 * How a controller uses it (docs/nextcloud-app.md, "Adding an OCS route"):
 *   #[NoAdminRequired]
 *   public function accounts(): DataResponse {
 *       return $this->answers->forUser(fn (string $uid): array => $this->bridge->accounts($uid));
 *   }
 */
final class OcsAnswers {
	public function __construct(
		private IUserSession $session,
		private IGroupManager $groups,
		private LoggerInterface $logger,
	) {
	}

	/**
	 * Runs `$route` as the session user. `$errors` is the API's error class: what escapes the route
	 * unexpected becomes its `internal_error`, with that API's fixed message.
	 * @param callable(string): array<array-key, mixed> $route
	 * @param class-string<ApiError> $errors
	 */
	public function forUser(callable $route, string $errors = ApiError::class): DataResponse {
		$uid = $this->sessionUid();
		if ($uid === null) {
			return self::unauthenticated();
		}
		return $this->run($route, $uid, $errors);
	}

	/**
	 * Runs `$route` as the session user only if that user is an administrator. Admin routes carry
	 * no #[NoAdminRequired], so Nextcloud refuses others before the controller runs; this asks
	 * IGroupManager again, so that a route whose attribute is changed by mistake still refuses.
	 * @param callable(string): array<array-key, mixed> $route
	 * @param class-string<ApiError> $errors
	 */
	public function forAdmin(callable $route, string $errors = ApiError::class): DataResponse {
		$uid = $this->sessionUid();
		if ($uid === null) {
			return self::unauthenticated();
		}
		if (!$this->groups->isAdmin($uid)) {
			return $this->failure($errors::forbidden());
		}
		return $this->run($route, $uid, $errors);
	}

	/**
	 * @param callable(string): array<array-key, mixed> $route
	 * @param class-string<ApiError> $errors
	 */
	private function run(callable $route, string $uid, string $errors): DataResponse {
		try {
			return new DataResponse($route($uid));
		} catch (ApiError $e) {
			return $this->failure($e);
		} catch (\Throwable $e) {
			return $this->failure($errors::internal($e));
		}
	}

	private function failure(ApiError $e): DataResponse {
		if ($e->status >= 500) {
			$this->logger->error('ocs api: ' . $e->errorCode . ': ' . $e->getMessage(), [
				'app' => Application::APP_ID,
				'exception' => $e->getPrevious() ?? $e,
			]);
		}
		return new DataResponse(['error' => $e->errorCode, 'message' => $e->getMessage()], $e->status);
	}

	private function sessionUid(): ?string {
		$uid = $this->session->getUser()?->getUID();
		return is_string($uid) && $uid !== '' ? $uid : null;
	}

	/** Not reachable through Nextcloud (no #[PublicPage] on any OCS route); refuse rather than guess. */
	private static function unauthenticated(): DataResponse {
		return new DataResponse(['error' => 'unauthenticated', 'message' => 'Not signed in'], 401);
	}
}
