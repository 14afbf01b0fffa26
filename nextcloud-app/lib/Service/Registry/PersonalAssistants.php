<?php

declare(strict_types=1);

namespace OCA\Tamebi\Service\Registry;

use OCA\Tamebi\Exception\ProxyError;
use OCA\Tamebi\Service\Orchestrator;

/**
 * A person's own assistants (issue #30), over the orchestrator's user routes signed as that person
 * (G1): list (theirs and those shared with a group they are in), create, edit, delete, propose to a
 * group. Their groups go with each request as signed `group` parameters ({@see MemberOf}); the
 * orchestrator decides everything else (the admin's ceiling on tools above all) and stores them as
 * the person's data. No token travels: these routes reach no tool.
 */
class PersonalAssistants {
	public const PATH = '/v1/assistants';

	public function __construct(
		private Orchestrator $orchestrator,
		private MemberOf $memberOf,
	) {
	}

	public function list(string $uid, string $requestId): array {
		return $this->call('GET', $this->memberOf->withGroups(self::PATH), $uid, $requestId);
	}

	/** @param array<string, mixed> $in */
	public function create(string $uid, array $in, string $requestId): array {
		return $this->call('POST', self::PATH, $uid, $requestId, self::spec($in));
	}

	/** @param array<string, mixed> $in */
	public function update(string $uid, string $id, array $in, string $requestId): array {
		return $this->call('PUT', self::PATH . '/' . self::id($id), $uid, $requestId, self::spec($in));
	}

	public function delete(string $uid, string $id, string $requestId): array {
		return $this->call('DELETE', self::PATH . '/' . self::id($id), $uid, $requestId);
	}

	/** Proposes the assistant to `$group` (null withdraws it); visible there once an admin approves. */
	public function share(string $uid, string $id, mixed $group, string $requestId): array {
		if ($group !== null && (!is_string($group) || $group === '')) {
			throw RegistryError::invalid('group must be the id of one of your groups, or null to withdraw.');
		}
		if ($group !== null && !in_array($group, $this->memberOf->groupIds(), true)) {
			throw RegistryError::invalid('You can only share with a group you are a member of.');
		}
		$path = $this->memberOf->withGroups(self::PATH . '/' . self::id($id) . '/share');
		return $this->call('POST', $path, $uid, $requestId, ['group' => $group]);
	}

	/**
	 * @param array<string, mixed> $in
	 * @return array{name: string, description: string, instructions: string, tools: list<string>, folders: list<string>}
	 */
	private static function spec(array $in): array {
		$name = trim(is_string($in['name'] ?? null) ? $in['name'] : '');
		if ($name === '' || mb_strlen($name) > 64) {
			throw RegistryError::invalid('The name must be 1-64 characters.');
		}
		$text = fn (string $f): string => is_string($in[$f] ?? null) ? $in[$f] : '';
		$list = function (string $f) use ($in): array {
			$v = $in[$f] ?? [];
			if (!is_array($v) || !array_is_list($v) || array_filter($v, fn ($x) => !is_string($x)) !== []) {
				throw RegistryError::invalid("$f must be a list of strings.");
			}
			return $v;
		};
		return [
			'name' => $name,
			'description' => $text('description'),
			'instructions' => $text('instructions'),
			'tools' => $list('tools'),
			'folders' => $list('folders'),
		];
	}

	private static function id(string $id): string {
		if (preg_match('/^u-[0-9a-f]{32}$/', $id) !== 1) {
			throw RegistryError::notFound('Assistant');
		}
		return $id;
	}

	/**
	 * @param array<string, mixed>|null $body
	 * @return array<string, mixed>
	 */
	private function call(string $method, string $path, string $uid, string $requestId, ?array $body = null): array {
		$json = $body === null ? '' : (string)json_encode($body, JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE);
		try {
			$reply = $this->orchestrator->send($method, $path, $uid, $json, [], $requestId);
		} catch (ProxyError $e) {
			throw RegistryError::unreachable($e);
		}
		return AdminRegistry::answer($reply, "$method $path");
	}
}
