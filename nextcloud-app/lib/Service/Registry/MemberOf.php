<?php

declare(strict_types=1);

namespace OCA\Tamebi\Service\Registry;

use OCP\IGroupManager;
use OCP\IUserSession;

/**
 * The signed-in person's Nextcloud groups, as the signed `group` query parameters of a request to
 * the orchestrator (issue #30): what decides which shared assistants they see. Asked of Nextcloud's
 * group manager on every request and never stored anywhere, so leaving a group ends access on the
 * next request; the orchestrator keeps no copy of who is in which group (docs/security.md).
 * It must never take a group from the request: only IGroupManager's answer for the session user.
 */
class MemberOf {
	/** The orchestrator refuses more than this many `group` parameters. */
	public const MAX_GROUPS = 256;

	public function __construct(
		private IUserSession $session,
		private IGroupManager $groups,
	) {
	}

	/** @return list<string> the session user's group ids the orchestrator accepts (1-255 characters, no control characters) */
	public function groupIds(): array {
		$user = $this->session->getUser();
		if ($user === null) {
			return [];
		}
		$ids = array_values(array_filter(array_map('strval', $this->groups->getUserGroupIds($user)),
			fn (string $g): bool => $g !== '' && mb_strlen($g) <= 255 && preg_match('/[\x00-\x1f\x7f]/', $g) !== 1));
		sort($ids);
		return array_slice(array_values(array_unique($ids)), 0, self::MAX_GROUPS);
	}

	/** `group=a&group=b` (rawurlencoded), '' when the person is in no group. */
	public function query(): string {
		return implode('&', array_map(fn (string $g): string => 'group=' . rawurlencode($g), $this->groupIds()));
	}

	/** `$path` with the group parameters appended (after any query it already has). */
	public function withGroups(string $path): string {
		$query = $this->query();
		if ($query === '') {
			return $path;
		}
		return $path . (str_contains($path, '?') ? '&' : '?') . $query;
	}
}
