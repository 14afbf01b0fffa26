<?php

declare(strict_types=1);

/**
 * The admin settings template (templates/admin.php) rendered outside Nextcloud, as Nextcloud
 * renders it: `p()` escapes as Nextcloud's does (htmlspecialchars, ENT_QUOTES, UTF-8) and
 * `$l->t()` substitutes its parameters as IL10N does. AdminStatusTest renders through it; run
 * from the command line it prints the section with a status that takes every branch of the
 * template, for the browser suite's axe check (tests/island_browser.rs, issue #34).
 */
function renderAdminTemplate(array $params): string {
	if (!function_exists('p')) {
		eval('function p($s): void { print(htmlspecialchars((string)$s, ENT_QUOTES | ENT_SUBSTITUTE, \'UTF-8\')); }');
	}
	$_ = $params + ['orchestratorUrl' => 'http://orch', 'mcpUrl' => '', 'checks' => []];
	$l = new class {
		public function t(string $text, array $params = []): string {
			return vsprintf($text, $params);
		}
	};
	ob_start();
	include __DIR__ . '/../templates/admin.php';
	return (string)ob_get_clean();
}

if (PHP_SAPI === 'cli' && isset($argv[0]) && realpath($argv[0]) === __FILE__) {
	$server = static fn (string $name, string $auth, bool $answers, string $state, ?int $http, ?int $tools, string $source, ?array $calls): array => [
		'name' => $name, 'auth' => $auth, 'answers' => $answers, 'state' => $state, 'httpStatus' => $http,
		'toolCount' => $tools, 'toolCountSource' => $source, 'calls' => $calls,
	];
	echo renderAdminTemplate([
		'orchestratorUrl' => 'http://127.0.0.1:8700',
		'mcpUrl' => '',
		'checks' => [
			['ok' => true, 'name' => 'orchestrator', 'detail' => 'answers at http://127.0.0.1:8700'],
			['ok' => false, 'name' => 'oidc', 'detail' => 'the oidc app is not enabled'],
		],
		'orchestrator' => ['ok' => true, 'status' => [
			'assistants' => [
				['name' => 'default', 'description' => 'Files, calendar, contacts and boards.', 'model' => 'primary', 'tools' => ['*/*'], 'servers' => ['nextcloud', 'mail'], 'toolCount' => 24],
				['name' => 'planner', 'description' => 'Your calendar <b>only</b>.', 'model' => 'primary', 'tools' => ['nextcloud/calendar_*'], 'servers' => ['nextcloud'], 'toolCount' => 3],
			],
			'servers' => [
				$server('nextcloud', 'nextcloud', true, 'sign-in-required', null, 21, 'seen', ['reachable' => true, 'circuit' => 'closed']),
				$server('mail', 'nextcloud', true, 'answered', 500, 6, 'last-listing', ['reachable' => false, 'circuit' => 'open', 'lastError' => 'tool.timeout']),
				$server('weather', 'none', false, 'unreachable', null, null, '', null),
			],
		]],
	]);
}
