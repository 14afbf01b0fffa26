<?php

declare(strict_types=1);

// In-memory implementations of the stubbed interfaces. The HTTP client is real (curl), so tests
// talk to real local servers rather than to mocks.

namespace OCA\Tamebi\Tests\Stubs;

use OCP\App\IAppManager;
use OCP\AppFramework\Http\IOutput;
use OCP\AppFramework\Services\IInitialState;
use OCP\AppFramework\Utility\ITimeFactory;
use OCP\Http\Client\IClient;
use OCP\Http\Client\IClientService;
use OCP\Http\Client\IResponse;
use OCP\IAppConfig;
use OCP\IConfig;
use OCP\IGroupManager;
use OCP\IL10N;
use OCP\IRequest;
use OCP\ISession;
use OCP\IURLGenerator;
use OCP\IUser;
use OCP\IUserSession;
use Psr\Log\LoggerInterface;

final class FakeRequest implements IRequest {
	public function __construct(private string $id = 'req-123', private array $headers = []) {
	}

	public function getId(): string {
		return $this->id;
	}

	public function getHeader(string $name): string {
		return $this->headers[$name] ?? '';
	}
}

final class FakeUser implements IUser {
	public function __construct(private string $uid, private string $displayName = '') {
	}

	public function getUID() {
		return $this->uid;
	}

	public function getDisplayName() {
		return $this->displayName !== '' ? $this->displayName : $this->uid;
	}
}

final class FakeUserSession implements IUserSession {
	public function __construct(private ?IUser $user) {
	}

	public function getUser() {
		return $this->user;
	}
}

/** Like Nextcloud's session: writing while closed is an error, so a missing reopen() shows up. */
/** Nextcloud's admin group, as a list of uids; records who was asked about. */
final class FakeGroupManager implements IGroupManager {
	/** @var list<string> */
	public array $asked = [];

	/**
	 * @param list<string> $admins
	 * @param array<string, list<string>> $members uid => the ids of their groups
	 */
	public function __construct(private array $admins = [], private array $members = []) {
	}

	public function isAdmin(string $userId): bool {
		$this->asked[] = $userId;
		return in_array($userId, $this->admins, true);
	}

	public function getUserGroupIds(\OCP\IUser $user): array {
		return $this->members[$user->getUID()] ?? [];
	}
}

final class FakeSession implements ISession {
	public array $data = [];
	public bool $open = true;
	/** @var list<string> */
	public array $events = [];

	public function set(string $key, $value) {
		if (!$this->open) {
			throw new \LogicException("session written while closed: $key");
		}
		$this->data[$key] = $value;
	}

	public function get(string $key) {
		return $this->data[$key] ?? null;
	}

	public function exists(string $key): bool {
		return isset($this->data[$key]);
	}

	public function remove(string $key) {
		if (!$this->open) {
			throw new \LogicException("session written while closed: $key");
		}
		unset($this->data[$key]);
	}

	public function close() {
		$this->open = false;
		$this->events[] = 'close';
	}

	public function reopen(): bool {
		$this->open = true;
		$this->events[] = 'reopen';
		return true;
	}
}

final class MemoryAppConfig implements IAppConfig {
	public array $values = [];
	public array $sensitive = [];

	public function getValueString(string $app, string $key, string $default = '', bool $lazy = false): string {
		return $this->values["$app/$key"] ?? $default;
	}

	public function setValueString(string $app, string $key, string $value, bool $lazy = false, bool $sensitive = false): bool {
		$this->values["$app/$key"] = $value;
		$this->sensitive["$app/$key"] = $sensitive;
		return true;
	}

	public function getKeys(string $app): array {
		$keys = [];
		foreach (array_keys($this->values) as $k) {
			if (str_starts_with($k, "$app/")) {
				$keys[] = substr($k, strlen($app) + 1);
			}
		}
		sort($keys);
		return $keys;
	}
}

final class FakeConfig implements IConfig {
	/** @param array<string, array<string, array<string, string>>> $user uid => app => key => value */
	public function __construct(private array $system = [], private array $user = []) {
	}

	public function getUserValue($userId, $appName, $key, $default = '') {
		return $this->user[$userId][$appName][$key] ?? $default;
	}

	public function getSystemValueString(string $key, string $default = ''): string {
		return $this->system[$key] ?? $default;
	}

	/** Values keep their PHP type, as config.php's do. */
	public function getSystemValue($key, $default = '') {
		return $this->system[$key] ?? $default;
	}
}

final class FakeAppManager implements IAppManager {
	/** @param list<string> $installed */
	public function __construct(public array $installed = []) {
	}

	public function isInstalled($appId) {
		return in_array($appId, $this->installed, true);
	}

	/** @param list<string> $enabled apps enabled for the (session) user; default: every installed one */
	public ?array $enabled = null;

	public function isEnabledForUser($appId, $user = null) {
		return in_array($appId, $this->enabled ?? $this->installed, true);
	}
}

/** Routes as a pretty-URL Nextcloud at $base would generate them. */
final class FakeUrlGenerator implements IURLGenerator {
	private const ROUTES = [
		'tamebi.page.index' => '/apps/tamebi/',
		'tamebi.api.conversations' => '/apps/tamebi/api/conversations',
		'tamebi.frame.show' => '/apps/tamebi/frame',
		'tamebi.connect.start' => '/apps/tamebi/connect',
		'tamebi.connect.callback' => '/apps/tamebi/oauth/callback',
	];

	public function __construct(private string $base) {
	}

	public function linkToRoute(string $routeName, array $arguments = []): string {
		return self::ROUTES[$routeName] ?? throw new \InvalidArgumentException("unknown route $routeName");
	}

	public function linkToRouteAbsolute(string $routeName, array $arguments = []): string {
		return rtrim($this->base, '/') . $this->linkToRoute($routeName, $arguments);
	}

	public function getAbsoluteURL(string $url): string {
		return rtrim($this->base, '/') . $url;
	}

	/** The base's path: what Nextcloud installed under a sub-folder answers ("" at the root). */
	public function getWebroot(): string {
		return rtrim((string)parse_url($this->base, PHP_URL_PATH), '/');
	}

	/** Nextcloud's answer for an app image on a standard install: the app's img/ folder. */
	public function imagePath(string $appName, string $file): string {
		if (!is_file(__DIR__ . '/../../img/' . $file)) {
			throw new \RuntimeException("image not found: image:$file webroot: serverroot:");
		}
		return "/apps/$appName/img/$file";
	}
}

/** Records what an app registers in Application::register, as Nextcloud's context would. */
final class FakeRegistrationContext implements \OCP\AppFramework\Bootstrap\IRegistrationContext {
	/** @var list<string> */
	public array $referenceProviders = [];
	/** @var list<array{string, string, int}> */
	public array $listeners = [];

	public function registerReferenceProvider(string $class): void {
		$this->referenceProviders[] = $class;
	}

	public function registerEventListener(string $event, string $listener, int $priority = 0): void {
		$this->listeners[] = [$event, $listener, $priority];
	}
}

final class FakeClock implements ITimeFactory {
	public function __construct(public ?int $now = null) {
	}

	public function getTime(): int {
		return $this->now ?? time();
	}
}

final class RecordingLogger implements LoggerInterface {
	/** @var list<array{string, string}> */
	public array $lines = [];
	/** @var list<\Throwable> */
	public array $exceptions = [];

	public function emergency(string|\Stringable $message, array $context = []): void {
		$this->log('emergency', $message, $context);
	}
	public function alert(string|\Stringable $message, array $context = []): void {
		$this->log('alert', $message, $context);
	}
	public function critical(string|\Stringable $message, array $context = []): void {
		$this->log('critical', $message, $context);
	}
	public function error(string|\Stringable $message, array $context = []): void {
		$this->log('error', $message, $context);
	}
	public function warning(string|\Stringable $message, array $context = []): void {
		$this->log('warning', $message, $context);
	}
	public function notice(string|\Stringable $message, array $context = []): void {
		$this->log('notice', $message, $context);
	}
	public function info(string|\Stringable $message, array $context = []): void {
		$this->log('info', $message, $context);
	}
	public function debug(string|\Stringable $message, array $context = []): void {
		$this->log('debug', $message, $context);
	}
	public function log($level, string|\Stringable $message, array $context = []): void {
		$this->lines[] = [(string)$level, (string)$message];
		if (($context['exception'] ?? null) instanceof \Throwable) {
			$this->exceptions[] = $context['exception']; // what nextcloud.log would show with the line
		}
	}

	public function text(): string {
		return implode("\n", array_map(fn ($l) => $l[0] . ' ' . $l[1], $this->lines));
	}
}

final class FakeInitialState implements IInitialState {
	public array $provided = [];

	public function provideInitialState(string $key, $data): void {
		$this->provided[$key] = $data;
	}
}

/** Records each write with the time it happened; $onWrite lets a test react mid-stream. */
final class RecordingOutput implements IOutput {
	/** @var list<array{float, string}> */
	public array $writes = [];

	public function __construct(private ?\Closure $onWrite = null) {
	}

	public function setOutput($out) {
		$this->writes[] = [microtime(true), (string)$out];
		if ($this->onWrite !== null) {
			($this->onWrite)((string)$out);
		}
	}

	public function setHeader($header) {
	}

	public function getHttpResponseCode() {
		return 200;
	}

	public function body(): string {
		return implode('', array_map(fn ($w) => $w[1], $this->writes));
	}
}

/** A real HTTP client on curl, honouring the IClient options the app uses. */
final class CurlClientService implements IClientService {
	public int $clients = 0;

	public function newClient(): IClient {
		$this->clients++;
		return new CurlClient();
	}
}

final class CurlClient implements IClient {
	public function get(string $uri, array $options = []): IResponse {
		return $this->request('GET', $uri, $options);
	}

	public function post(string $uri, array $options = []): IResponse {
		return $this->request('POST', $uri, $options);
	}

	public function put(string $uri, array $options = []): IResponse {
		return $this->request('PUT', $uri, $options);
	}

	public function delete(string $uri, array $options = []): IResponse {
		return $this->request('DELETE', $uri, $options);
	}

	public function request(string $method, string $uri, array $options = []): IResponse {
		$headers = ['Expect:'];
		foreach ($options['headers'] ?? [] as $name => $value) {
			$headers[] = "$name: $value";
		}
		$responseHeaders = [];
		$ch = curl_init($uri);
		curl_setopt_array($ch, [
			CURLOPT_CUSTOMREQUEST => $method,
			CURLOPT_HTTPHEADER => $headers,
			CURLOPT_RETURNTRANSFER => true,
			CURLOPT_FOLLOWLOCATION => ($options['allow_redirects'] ?? true) !== false,
			CURLOPT_TIMEOUT => (int)($options['timeout'] ?? 30),
			CURLOPT_HEADERFUNCTION => function ($ch, string $line) use (&$responseHeaders): int {
				if (str_contains($line, ':')) {
					[$name, $value] = explode(':', $line, 2);
					$responseHeaders[strtolower(trim($name))] = trim($value);
				}
				return strlen($line);
			},
		]);
		if (isset($options['body'])) {
			curl_setopt($ch, CURLOPT_POSTFIELDS, $options['body']);
		}
		$body = curl_exec($ch);
		if ($body === false) {
			$error = curl_error($ch);
			throw new \RuntimeException("cURL error: $error");
		}
		$status = curl_getinfo($ch, CURLINFO_RESPONSE_CODE);
		if (($options['http_errors'] ?? true) !== false && $status >= 400) {
			throw new \RuntimeException("HTTP $status");
		}
		return new CurlResponse($status, $responseHeaders, (string)$body);
	}
}

final class CurlResponse implements IResponse {
	public function __construct(private int $status, private array $headers, private string $body) {
	}

	public function getBody() {
		return $this->body;
	}

	public function getStatusCode(): int {
		return $this->status;
	}

	public function getHeader(string $key): string {
		return $this->headers[strtolower($key)] ?? '';
	}

	public function getHeaders(): array {
		return $this->headers;
	}
}

/**
 * The app's strings in one language, read from nextcloud-app/l10n/<lang>.json as Nextcloud's
 * OC\L10N\L10N reads them: `translations` by English source text (a plural under
 * `_singular_::_plural_` with one form per plural), `pluralForm` as gettext writes it; t() and
 * n() fill `%s`-style parameters with vsprintf, n() puts the count in for `%n`. A language
 * without a file (English) gives the source text back.
 */
final class FakeL10N implements IL10N {
	/** @var array<string, string|list<string>> */
	private array $translations = [];
	private int $plurals = 2;

	public function __construct(private string $language = 'en', private string $locale = 'en_US') {
		$file = __DIR__ . '/../../l10n/' . $language . '.json';
		if (is_file($file)) {
			$bundle = json_decode((string)file_get_contents($file), true, 512, JSON_THROW_ON_ERROR);
			$this->translations = $bundle['translations'];
			if (preg_match('/nplurals=([0-9]+)/', (string)$bundle['pluralForm'], $m) === 1) {
				$this->plurals = (int)$m[1];
			}
		}
	}

	public function t(string $text, $parameters = []): string {
		$translation = $this->translations[$text] ?? $text;
		return vsprintf(is_array($translation) ? $translation[0] : $translation, is_array($parameters) ? $parameters : [$parameters]);
	}

	public function n(string $text_singular, string $text_plural, int $count, array $parameters = []): string {
		$forms = $this->translations['_' . $text_singular . '_::_' . $text_plural . '_'] ?? [$text_singular, $text_plural];
		// The plural rule of every language this app ships (nplurals=2; plural=(n != 1)).
		$form = $forms[$this->plurals === 2 && $count !== 1 ? 1 : 0] ?? $text_plural;
		return vsprintf(str_replace('%n', (string)$count, $form), $parameters);
	}

	public function l(string $type, $data, array $options = []) {
		return false;
	}

	public function getLanguageCode(): string {
		return $this->language;
	}

	public function getLocaleCode(): string {
		return $this->locale;
	}
}
