<?php

declare(strict_types=1);

/*
 * The tamebi app's mail bridge served by PHP's built-in server, with the fake Mail backend:
 *
 *   TAMEBI_MAIL_STATE=state.json TAMEBI_MAIL_TOKENS=tok-a=alice,tok-b=bob [TAMEBI_MAIL_ABSENT=1] \
 *     php -S 127.0.0.1:PORT tests/mail-bridge-server.php
 *
 * The app's own classes (MailController, MailBridge, MailContracts) run unchanged. Around them this
 * script does, in a few lines, what Nextcloud does for an OCS route, so the shared contract suite
 * (dev/mail-contract) can call the bridge over real HTTP:
 * - authentication: `Authorization: Bearer <token>` names the session user (user_oidc's job);
 *   anything else is Nextcloud's 401;
 * - routing from appinfo/routes.php's 'ocs' section, URL parameters and query parameters passed to
 *   the action by name; a known URL with another verb is 405;
 * - the SecurityMiddleware rules the controller's attributes select: without #[NoAdminRequired] a
 *   (non-admin) user is refused; without #[NoCSRFRequired] a request passes only as an OCS request
 *   (`OCS-APIRequest: true` or a Bearer token) since it has no CSRF token;
 * - the OCS v2 JSON envelope exactly as V2Response renders it (meta.message "OK" on success, ""
 *   for an error DataResponse).
 * TAMEBI_MAIL_ABSENT=1 disables Mail for the user (IAppManager says no): every route must be 501.
 */

use OCA\Tamebi\Controller\MailController;
use OCA\Tamebi\Http\OcsAnswers;
use OCA\Tamebi\Service\Mail\MailBridge;
use OCA\Tamebi\Service\Mail\MailContracts;
use OCA\Tamebi\Service\RequestBody;
use OCA\Tamebi\Tests\FakeMail;
use OCA\Tamebi\Tests\Stubs\FakeAppManager;
use OCA\Tamebi\Tests\Stubs\FakeGroupManager;
use OCA\Tamebi\Tests\Stubs\FakeRequest;
use OCA\Tamebi\Tests\Stubs\FakeUser;
use OCA\Tamebi\Tests\Stubs\FakeUserSession;
use OCA\Tamebi\Tests\Stubs\RecordingLogger;
use OCP\AppFramework\Http\DataResponse;
use OCP\AppFramework\OCSController;

require_once __DIR__ . '/autoload.php';

const OCS_PREFIX = '/ocs/v2.php/apps/tamebi';

function reply(int $status, array $meta, mixed $data): void {
	http_response_code($status);
	header('Content-Type: application/json; charset=utf-8');
	echo json_encode(['ocs' => ['meta' => $meta, 'data' => $data]], JSON_HEX_TAG | JSON_THROW_ON_ERROR);
}

function refuse(int $status, string $message): void {
	reply($status, ['status' => 'failure', 'statuscode' => $status, 'message' => $message], []);
}

/** @return array<string, string> request headers by canonical name */
function headers(): array {
	$out = [];
	foreach ($_SERVER as $k => $v) {
		if (str_starts_with($k, 'HTTP_')) {
			$out[str_replace(' ', '-', ucwords(strtolower(str_replace('_', ' ', substr($k, 5)))))] = (string)$v;
		}
	}
	if (isset($_SERVER['CONTENT_TYPE'])) {
		$out['Content-Type'] = (string)$_SERVER['CONTENT_TYPE'];
	}
	return $out;
}

$path = rawurldecode((string)parse_url((string)$_SERVER['REQUEST_URI'], PHP_URL_PATH));
$verb = (string)$_SERVER['REQUEST_METHOD'];
$headers = headers();

// Authentication (user_oidc turns the bearer into the session user).
$tokens = [];
foreach (explode(',', (string)getenv('TAMEBI_MAIL_TOKENS')) as $pair) {
	[$token, $user] = array_pad(explode('=', $pair, 2), 2, '');
	if ($token !== '' && $user !== '') {
		$tokens[$token] = $user;
	}
}
$auth = $headers['Authorization'] ?? '';
$uid = str_starts_with($auth, 'Bearer ') ? ($tokens[substr($auth, 7)] ?? null) : null;
if ($uid === null) {
	header('WWW-Authenticate: Bearer realm="Nextcloud"');
	refuse(401, 'Current user is not logged in');
	return true;
}

// Routing, as Nextcloud reads appinfo/routes.php.
if (!str_starts_with($path, OCS_PREFIX . '/')) {
	refuse(404, 'Invalid query, please check the syntax.');
	return true;
}
$routes = (require dirname(__DIR__) . '/appinfo/routes.php')['ocs'];
$match = null;
$wrongVerb = false;
foreach ($routes as $route) {
	$regex = '#^' . preg_replace('#\\\\\{(\w+)\\\\\}#', '(?P<$1>[^/]+)', preg_quote($route['url'], '#')) . '$#D';
	if (preg_match($regex, substr($path, strlen(OCS_PREFIX)), $m) === 1) {
		if ($route['verb'] !== $verb) {
			$wrongVerb = true;
			continue;
		}
		$match = [$route, array_filter($m, 'is_string', ARRAY_FILTER_USE_KEY)];
		break;
	}
}
if ($match === null) {
	$wrongVerb ? refuse(405, 'Method not allowed') : refuse(404, 'Invalid query, please check the syntax.');
	return true;
}
[$route, $urlParams] = $match;
[, $action] = explode('#', $route['name']);

// The controller, wired as the container would, with Mail's services from the fake.
$mail = new FakeMail((string)getenv('TAMEBI_MAIL_STATE'));
$apps = new FakeAppManager(['mail', 'tamebi']);
$apps->enabled = getenv('TAMEBI_MAIL_ABSENT') === '1' ? ['tamebi'] : ['mail', 'tamebi'];
$controller = new MailController(new FakeRequest('php-s-' . bin2hex(random_bytes(4)), $headers),
	new MailBridge(new MailContracts($apps, $mail)),
	new OcsAnswers(new FakeUserSession(new FakeUser($uid)), new FakeGroupManager([]), new RecordingLogger()),
	new RequestBody('php://input'));

// SecurityMiddleware: what the action's attributes let through.
$method = new ReflectionMethod($controller, $action);
$has = static fn (string $attribute): bool => $method->getAttributes('OCP\\AppFramework\\Http\\Attribute\\' . $attribute) !== [];
if (!$has('NoAdminRequired')) {
	refuse(403, 'Logged in account must be an admin');
	return true;
}
$ocsRequest = ($headers['Ocs-Apirequest'] ?? '') === 'true' || str_starts_with($auth, 'Bearer ');
if (!$has('NoCSRFRequired') && !($controller instanceof OCSController && $ocsRequest)) {
	refuse(412, 'CSRF check failed');
	return true;
}

// Parameters by name: URL first, then the query string.
$args = [];
foreach ($method->getParameters() as $p) {
	$name = $p->getName();
	if (array_key_exists($name, $urlParams)) {
		$args[] = $urlParams[$name];
	} elseif (isset($_GET[$name]) && is_string($_GET[$name])) {
		$args[] = $_GET[$name];
	} elseif ($p->isDefaultValueAvailable()) {
		$args[] = $p->getDefaultValue();
	} else {
		refuse(400, "missing parameter $name");
		return true;
	}
}

/** @var DataResponse $response */
$response = $method->invokeArgs($controller, $args);
$status = (int)$response->getStatus();
$ok = $status >= 200 && $status < 300;
reply($status, ['status' => $ok ? 'ok' : 'failure', 'statuscode' => $status, 'message' => $ok ? 'OK' : ''], $response->getData());
return true;
