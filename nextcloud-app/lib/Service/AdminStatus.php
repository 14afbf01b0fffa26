<?php

declare(strict_types=1);

namespace OCA\Tamebi\Service;

use OCA\Tamebi\Exception\ProxyError;
use OCP\IGroupManager;
use OCP\IL10N;
use OCP\IUserSession;
use Psr\Log\LoggerInterface;

/**
 * What the admin settings page shows about the orchestrator: its assistants (read-only, from
 * the operator's TAMEBI_ASSISTANTS file) and, per configured MCP server, whether it answers and
 * how many tools it offers. Asked through the orchestrator's admin route, signed for the
 * session's user only after IGroupManager::isAdmin said yes. An admin of Nextcloud is not an
 * admin of anyone's data: the route answers configuration, never a user's content, and this
 * request carries no user token.
 */
class AdminStatus {
	public const PATH = '/v1/admin/status';

	public function __construct(
		private Orchestrator $orchestrator,
		private IUserSession $userSession,
		private IGroupManager $groupManager,
		private LoggerInterface $logger,
		private IL10N $l,
	) {
	}

	/**
	 * @return array{ok: bool, status: ?array, error: string, code: int}
	 */
	public function fetch(string $requestId = ''): array {
		$user = $this->userSession->getUser();
		if ($user === null || !$this->groupManager->isAdmin($user->getUID())) {
			// Never signed: the orchestrator would refuse it anyway, and a non-admin gets no signature at all.
			return ['ok' => false, 'status' => null, 'error' => $this->l->t('Only administrators can see the orchestrator status.'), 'code' => 403];
		}
		try {
			$reply = $this->orchestrator->sendAdmin(self::PATH, $user->getUID(), $requestId);
		} catch (ProxyError $e) {
			$this->logger->warning('Tamebi: admin status: ' . $e->getMessage(), ['app' => 'tamebi']);
			return ['ok' => false, 'status' => null, 'error' => $this->l->t('The orchestrator could not be reached.'), 'code' => 502];
		}
		$status = json_decode($reply->body, true);
		if (!$reply->isSuccess() || !is_array($status) || !isset($status['assistants'], $status['servers'])) {
			$this->logger->warning('Tamebi: admin status answered ' . $reply->status, ['app' => 'tamebi']);
			return ['ok' => false, 'status' => null, 'error' => $this->l->t('The orchestrator refused the status request (HTTP %s).', [(string)$reply->status]), 'code' => 502];
		}
		return ['ok' => true, 'status' => $status, 'error' => '', 'code' => 200];
	}
}
