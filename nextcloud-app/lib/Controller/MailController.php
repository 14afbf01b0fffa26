<?php

declare(strict_types=1);

namespace OCA\Tamebi\Controller;

use OCA\Tamebi\AppInfo\Application;
use OCA\Tamebi\Exception\ProxyError;
use OCA\Tamebi\Http\OcsAnswers;
use OCA\Tamebi\Service\Mail\MailBridge;
use OCA\Tamebi\Service\Mail\MailError;
use OCA\Tamebi\Service\RequestBody;
use OCP\AppFramework\Http\Attribute\NoAdminRequired;
use OCP\AppFramework\Http\DataResponse;
use OCP\AppFramework\OCSController;
use OCP\IRequest;

/**
 * The mail bridge's OCS routes, /ocs/v2.php/apps/tamebi/api/v1/mail/... (docs/mail-bridge-api.md),
 * called by mcp-mail with the user's own bearer token (user_oidc makes its subject the session
 * user). It acts as that session user and nobody else; there is no admin path.
 *
 * The attributes, and why exactly these (read from nextcloud/server's SecurityMiddleware):
 * - an OCSController WITHOUT #[NoCSRFRequired]: the CSRF check stays on, and Nextcloud lets a
 *   request without the CSRF token through only when the controller is an OCSController AND the
 *   request carries `OCS-APIRequest: true` or `Authorization: Bearer …` (isValidOCSRequest). So
 *   mcp-mail's bearer requests pass, while a browser page on another site that tries to ride the
 *   user's session cookie cannot (it can set neither header cross-site). #[NoCSRFRequired] would
 *   also skip the strict-cookie check and let such cookie-only requests in: weaker, so not used.
 * - #[NoAdminRequired]: every user may use their own mail; without it only admins could.
 * - no #[PublicPage]: an unauthenticated request is refused by Nextcloud (401) before this runs.
 * - no #[CORS], no #[BruteForceProtection] bypass, no #[UseSession]: nothing here needs them.
 *
 * Every answer, failures included, is the contract's shape, through the app's one OCS answer
 * (OcsAnswers): a MailError as it is, and anything else that escapes (a Mail exception
 * MailContracts did not expect, a TypeError) as 500 `internal_error` with the bridge's fixed
 * message. The details of every 5xx go to nextcloud.log only.
 */
class MailController extends OCSController {
	public function __construct(
		IRequest $request,
		private MailBridge $bridge,
		private OcsAnswers $answers,
		private RequestBody $body,
	) {
		parent::__construct(Application::APP_ID, $request);
	}

	#[NoAdminRequired]
	public function accounts(): DataResponse {
		return $this->answer(fn (string $uid): array => $this->bridge->accounts($uid));
	}

	#[NoAdminRequired]
	public function mailboxes(string $accountId): DataResponse {
		return $this->answer(fn (string $uid): array => $this->bridge->mailboxes($uid, $accountId));
	}

	/** Query parameters arrive by name, untyped: MailBridge validates each (400 with a reason). */
	#[NoAdminRequired]
	public function messages(?string $query = null, ?string $mailbox_id = null, ?string $from = null, ?string $to = null,
		?string $since = null, ?string $until = null, ?string $unread = null, ?string $limit = null): DataResponse {
		$params = compact('query', 'mailbox_id', 'from', 'to', 'since', 'until', 'unread', 'limit');
		return $this->answer(fn (string $uid): array => $this->bridge->messages($uid, $params));
	}

	#[NoAdminRequired]
	public function message(string $id): DataResponse {
		return $this->answer(fn (string $uid): array => $this->bridge->message($uid, $id));
	}

	/** The raw JSON body is read, not Nextcloud's parsed parameters: unknown fields must be seen to be refused. */
	#[NoAdminRequired]
	public function send(): DataResponse {
		return $this->answer(fn (string $uid): array => $this->bridge->send($uid, $this->rawBody(), $this->request->getHeader('Content-Type')));
	}

	#[NoAdminRequired]
	public function draft(): DataResponse {
		return $this->answer(fn (string $uid): array => $this->bridge->draft($uid, $this->rawBody(), $this->request->getHeader('Content-Type')));
	}

	/** @param callable(string): array<string, mixed> $route */
	private function answer(callable $route): DataResponse {
		return $this->answers->forUser($route, MailError::class);
	}

	private function rawBody(): string {
		try {
			return $this->body->read();
		} catch (ProxyError) {
			throw MailError::invalid('the request body is too large');
		}
	}
}
