<?php

declare(strict_types=1);

/*
 * The tamebi app's Talk webhook served by PHP's built-in server, for tests in which a real Talk
 * (the stand-in's) calls it:
 *
 *   TAMEBI_TALK_SECRET=… TAMEBI_TALK_NC_URL=http://stand-in TAMEBI_TALK_ORCHESTRATOR=http://… \
 *   TAMEBI_TALK_PROXY_SECRET=… TAMEBI_TALK_SIGNING_SECRET=… TAMEBI_TALK_CACHE=dir \
 *     PHP_CLI_SERVER_WORKERS=4 php -S 127.0.0.1:PORT tests/talk-webhook-server.php
 *
 * The app's own classes (TalkController, Webhook, Limits, RoomTurns, BotReplies, Orchestrator,
 * AfterResponse) run unchanged. Around them this script does what Nextcloud does for this one
 * route: routing from appinfo/routes.php's 'ocs' section (only talk#webhook; anything else is
 * 404), the #[PublicPage] rule (no user is looked for; a controller without the attribute would be
 * refused here), the CSRF rule of an OCS route (OCS-APIRequest: true), and the response written
 * with a Content-Length, as Nextcloud writes a DataResponse. The memory cache is FileMemcache
 * (atomic across the server's worker processes); `IAppConfig` is filled from the environment.
 * Every request the app sends to the orchestrator goes to TAMEBI_TALK_ORCHESTRATOR; the "Continue in
 * Tamebi" link points at TAMEBI_TALK_PAGE_BASE (default: the Nextcloud URL). GET /healthz answers
 * 200 for readiness checks.
 */

use OCA\Tamebi\Controller\TalkController;
use OCA\Tamebi\Http\AfterResponse;
use OCA\Tamebi\Service\AppSettings;
use OCA\Tamebi\Service\OidcFlow;
use OCA\Tamebi\Service\Orchestrator;
use OCA\Tamebi\Service\RequestBody;
use OCA\Tamebi\Service\Talk\BotReplies;
use OCA\Tamebi\Service\Talk\Limits;
use OCA\Tamebi\Service\Talk\RoomTurns;
use OCA\Tamebi\Service\Talk\Webhook;
use OCA\Tamebi\Tests\Stubs\CurlClientService;
use OCA\Tamebi\Tests\Stubs\FakeClock;
use OCA\Tamebi\Tests\Stubs\FakeL10N;
use OCA\Tamebi\Tests\Stubs\FakeRequest;
use OCA\Tamebi\Tests\Stubs\FakeUrlGenerator;
use OCA\Tamebi\Tests\Stubs\FileCacheFactory;
use OCA\Tamebi\Tests\Stubs\MemoryAppConfig;
use OCA\Tamebi\Tests\Stubs\RecordingLogger;

require_once __DIR__ . '/autoload.php';

/** Writes the response as Nextcloud does: status, JSON, Content-Length. */
function answer(int $status, mixed $data): void {
	$body = json_encode(['ocs' => ['meta' => ['status' => $status < 300 ? 'ok' : 'failure', 'statuscode' => $status, 'message' => $status < 300 ? 'OK' : ''], 'data' => $data]], JSON_THROW_ON_ERROR);
	http_response_code($status);
	header('Content-Type: application/json; charset=utf-8');
	header('Content-Length: ' . strlen($body));
	echo $body;
}

/** @return array<string, string> */
function requestHeaders(): array {
	$out = [];
	foreach ($_SERVER as $k => $v) {
		if (str_starts_with($k, 'HTTP_')) {
			$out[str_replace(' ', '-', ucwords(strtolower(str_replace('_', ' ', substr($k, 5)))))] = (string)$v;
		}
	}
	return $out;
}

$path = rawurldecode((string)parse_url((string)$_SERVER['REQUEST_URI'], PHP_URL_PATH));
if ($path === '/healthz') { // for scripts/dev's readiness check; not a route of the app
	http_response_code(200);
	header('Content-Type: application/json');
	echo '{"status":"ok"}';
	return true;
}
$prefix = '/ocs/v2.php/apps/tamebi';
$route = null;
foreach ((require dirname(__DIR__) . '/appinfo/routes.php')['ocs'] as $r) {
	if ($r['name'] === 'talk#webhook' && $prefix . $r['url'] === $path) {
		$route = $r;
	}
}
if ($route === null) {
	answer(404, []);
	return true;
}
if ($_SERVER['REQUEST_METHOD'] !== $route['verb']) {
	answer(405, []);
	return true;
}
$headers = requestHeaders();
$request = new class ('talk-s-' . bin2hex(random_bytes(4)), $headers) implements \OCP\IRequest {
	public function __construct(private string $id, private array $headers) {
	}

	public function getId(): string {
		return $this->id;
	}

	public function getHeader(string $name): string {
		foreach ($this->headers as $k => $v) {
			if (strcasecmp($k, $name) === 0) {
				return $v;
			}
		}
		return '';
	}
};
if (strtolower($request->getHeader('OCS-APIRequest')) !== 'true') {
	answer(412, ['message' => 'CSRF check failed']);
	return true;
}

$env = static fn (string $name): string => (string)getenv($name);
$appConfig = new MemoryAppConfig();
$settings = new AppSettings($appConfig);
$settings->set(AppSettings::ORCHESTRATOR_URL, $env('TAMEBI_TALK_ORCHESTRATOR'));
$settings->set(AppSettings::PROXY_SECRET, $env('TAMEBI_TALK_PROXY_SECRET'));
$settings->set(AppSettings::SIGNING_SECRET, $env('TAMEBI_TALK_SIGNING_SECRET'));
$settings->set(AppSettings::TALK_BOT_SECRET, $env('TAMEBI_TALK_SECRET'));
$settings->set(AppSettings::INTERNAL_URL, $env('TAMEBI_TALK_NC_URL'));
$logger = new RecordingLogger();
$clients = new CurlClientService();
$clock = new FakeClock();
$urls = new FakeUrlGenerator($env('TAMEBI_TALK_NC_URL'));
// Where "Continue in Tamebi" points: the Nextcloud's own page, or (scripts/dev) the island dev host.
$pages = new FakeUrlGenerator($env('TAMEBI_TALK_PAGE_BASE') ?: $env('TAMEBI_TALK_NC_URL'));
$limits = new Limits(new FileCacheFactory($env('TAMEBI_TALK_CACHE') ?: null), $clock);
$turns = new RoomTurns(new Orchestrator($settings, $clients, $clock),
	new BotReplies($settings, new OidcFlow($settings, $clients, $urls, $clock), $clients, $logger), $pages, new FakeL10N('en'), $logger);
$after = new AfterResponse($logger);
$controller = new TalkController('tamebi', $request, new Webhook($settings, $limits, $logger), $turns, $after, new RequestBody('php://input'));

$method = new ReflectionMethod($controller, 'webhook');
if ($method->getAttributes('OCP\\AppFramework\\Http\\Attribute\\PublicPage') === []) {
	answer(401, ['message' => 'Current user is not logged in']);
	return true;
}
$response = $controller->webhook();
answer((int)$response->getStatus(), $response->getData());
// What the app logged, for the test to read (the webhook body must never be in it).
register_shutdown_function(static function () use ($logger): void {
	$log = getenv('TAMEBI_TALK_LOG');
	if ($log) {
		foreach ($logger->lines as [$level, $message]) {
			file_put_contents($log, "$level $message\n", FILE_APPEND | LOCK_EX);
		}
	}
});
return true;
