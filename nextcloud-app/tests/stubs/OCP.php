<?php

declare(strict_types=1);

// Hand-written stubs of the OCP interfaces and classes the app uses, reduced to the members it
// calls, with the same signatures as Nextcloud 31. Behaviour that matters to a test (how a
// Response merges its Content-Security-Policy into its headers) mirrors Nextcloud's own code.

namespace OCP {
	interface IRequest {
		public function getId(): string;
		public function getHeader(string $name): string;
	}

	interface IUser {
		public function getUID();
		public function getDisplayName();
	}

	interface IUserSession {
		public function getUser();
	}

	interface IGroupManager {
		public function isAdmin(string $userId): bool;
		/** @return string[] the ids of the user's groups */
		public function getUserGroupIds(IUser $user): array;
	}

	interface ISession {
		public function set(string $key, $value);
		public function get(string $key);
		public function exists(string $key): bool;
		public function remove(string $key);
		public function close();
		public function reopen(): bool;
	}

	interface IAppConfig {
		public function getValueString(string $app, string $key, string $default = '', bool $lazy = false): string;
		public function setValueString(string $app, string $key, string $value, bool $lazy = false, bool $sensitive = false): bool;
		public function getKeys(string $app): array;
	}

	interface IConfig {
		public function getSystemValueString(string $key, string $default = ''): string;
		public function getSystemValue($key, $default = '');
		public function getUserValue($userId, $appName, $key, $default = '');
	}

	/** Nextcloud 31's \OCP\IL10N: an app's strings in one language (IFactory::get). */
	interface IL10N {
		public function t(string $text, $parameters = []): string;
		public function n(string $text_singular, string $text_plural, int $count, array $parameters = []): string;
		public function l(string $type, $data, array $options = []);
		public function getLanguageCode(): string;
		public function getLocaleCode(): string;
	}

	interface IURLGenerator {
		public function linkToRoute(string $routeName, array $arguments = []): string;
		public function linkToRouteAbsolute(string $routeName, array $arguments = []): string;
		public function getAbsoluteURL(string $url): string;
		public function imagePath(string $appName, string $file): string;
		public function getWebroot(): string;
	}

	/** Records what a page asked to load, like Nextcloud's script/style queue. */
	class Util {
		public static array $scripts = [];
		public static array $styles = [];

		public static function addScript(string $application, ?string $file = null, string $afterAppId = 'core', bool $prepend = false): void {
			self::$scripts[] = $application . '/' . $file;
		}

		public static function addStyle(string $application, ?string $file = null, bool $prepend = false): void {
			self::$styles[] = $application . '/' . $file;
		}
	}
}

namespace OCP\App {
	interface IAppManager {
		public function isInstalled($appId);
		public function isEnabledForUser($appId, $user = null);
	}
}

namespace OCP\AppFramework\Db {
	class DoesNotExistException extends \Exception {
	}
}

namespace OCP\AppFramework\Utility {
	interface ITimeFactory {
		public function getTime(): int;
	}
}

namespace OCP\AppFramework\Services {
	interface IInitialState {
		public function provideInitialState(string $key, $data): void;
	}
}

namespace OCP\Http\Client {
	interface IResponse {
		public function getBody();
		public function getStatusCode(): int;
		public function getHeader(string $key): string;
		public function getHeaders(): array;
	}

	interface IClient {
		public function get(string $uri, array $options = []): IResponse;
		public function post(string $uri, array $options = []): IResponse;
		public function put(string $uri, array $options = []): IResponse;
		public function delete(string $uri, array $options = []): IResponse;
		/** Nextcloud's implementation takes (method, uri, options), whatever the interface's names say. */
		public function request(string $method, string $uri, array $options = []): IResponse;
	}

	interface IClientService {
		public function newClient(): IClient;
	}
}

namespace OCP\AppFramework {
	use OCP\IRequest;

	class Http {
		public const STATUS_OK = 200;
		public const STATUS_NO_CONTENT = 204;
		public const STATUS_SEE_OTHER = 303;
		public const STATUS_UNAUTHORIZED = 401;
	}

	abstract class Controller {
		public function __construct(
			protected string $appName,
			protected IRequest $request,
		) {
		}
	}
}

namespace OCP\AppFramework\Http {
	use OCP\AppFramework\Http;

	/** Nextcloud's empty policy: what the CSP middleware leaves alone (compared by exact class). */
	class EmptyContentSecurityPolicy {
		protected array $allowedScriptDomains = [];
		protected array $allowedFrameDomains = [];
		protected ?string $jsNonce = null;
		protected bool $strictDynamicAllowed = false;

		/** @param string $domain */
		public function addAllowedFrameDomain($domain): static {
			$this->allowedFrameDomains[] = $domain;
			return $this;
		}

		public function getAllowedFrameDomains(): array {
			return $this->allowedFrameDomains;
		}

		protected function frameSrc(): string {
			return $this->allowedFrameDomains === [] ? '' : 'frame-src ' . implode(' ', $this->allowedFrameDomains) . ';';
		}

		public function useJsNonce(string $nonce): static {
			$this->jsNonce = $nonce;
			return $this;
		}

		public function useStrictDynamic(bool $state = false): static {
			$this->strictDynamicAllowed = $state;
			return $this;
		}

		public function buildPolicy(): string {
			$script = [];
			if ($this->jsNonce !== null) {
				$script[] = "'nonce-" . base64_encode($this->jsNonce) . "'";
			}
			if ($this->strictDynamicAllowed) {
				$script[] = "'strict-dynamic'";
			}
			$policy = "default-src 'none';base-uri 'none';manifest-src 'self';";
			if ($script !== []) {
				$policy .= 'script-src ' . implode(' ', $script) . ';';
			}
			return $policy . $this->frameSrc() . "frame-ancestors 'none'";
		}
	}

	/** Nextcloud's default page policy: self + nonce + strict-dynamic. */
	class ContentSecurityPolicy extends EmptyContentSecurityPolicy {
		protected bool $strictDynamicAllowed = true;

		public function buildPolicy(): string {
			return "default-src 'self'; script-src 'self' 'strict-dynamic'"
				. ($this->jsNonce !== null ? " 'nonce-" . base64_encode($this->jsNonce) . "'" : '')
				. "; style-src 'self' 'unsafe-inline';" . $this->frameSrc() . " frame-ancestors 'self'";
		}
	}

	class Response {
		private array $headers = [];
		private int $status;
		private ?EmptyContentSecurityPolicy $contentSecurityPolicy = null;

		public function __construct(int $status = Http::STATUS_OK, array $headers = []) {
			$this->status = $status;
			$this->headers = $headers;
		}

		public function addHeader($name, $value) {
			$name = trim($name);
			if ($value === null) {
				unset($this->headers[$name]);
			} else {
				$this->headers[$name] = $value;
			}
			return $this;
		}

		/** As in Nextcloud: defaults, including the policy object's header, overridden by added headers. */
		public function getHeaders() {
			$mergeWith = [
				'X-Request-Id' => 'stub-request-id',
				'Cache-Control' => 'no-cache, no-store, must-revalidate',
				'Content-Security-Policy' => $this->getContentSecurityPolicy()->buildPolicy(),
				'Feature-Policy' => "autoplay 'none'",
				'X-Robots-Tag' => 'noindex, nofollow',
			];
			return array_merge($mergeWith, $this->headers);
		}

		public function render() {
			return '';
		}

		public function setStatus($status): static {
			$this->status = $status;
			return $this;
		}

		public function getStatus() {
			return $this->status;
		}

		public function setContentSecurityPolicy(EmptyContentSecurityPolicy $csp) {
			$this->contentSecurityPolicy = $csp;
			return $this;
		}

		public function getContentSecurityPolicy() {
			if ($this->contentSecurityPolicy === null) {
				$this->setContentSecurityPolicy(new EmptyContentSecurityPolicy());
			}
			return $this->contentSecurityPolicy;
		}
	}

	class JSONResponse extends Response {
		public function __construct(
			protected $data = [],
			int $status = Http::STATUS_OK,
			array $headers = [],
		) {
			parent::__construct($status, $headers);
			$this->addHeader('Content-Type', 'application/json; charset=utf-8');
		}

		public function render() {
			return json_encode($this->data, JSON_HEX_TAG | JSON_THROW_ON_ERROR);
		}

		public function getData() {
			return $this->data;
		}
	}

	/** The data of an OCS answer; the OCS formatter (V2Response) wraps it in {"ocs":{"meta","data"}}. */
	class DataResponse extends Response {
		public function __construct(
			protected $data = [],
			int $statusCode = Http::STATUS_OK,
			array $headers = [],
		) {
			parent::__construct($statusCode, $headers);
		}

		public function getData() {
			return $this->data;
		}
	}

	class DataDisplayResponse extends Response {
		public function __construct(
			protected string $data = '',
			int $statusCode = Http::STATUS_OK,
			array $headers = [],
		) {
			parent::__construct($statusCode, $headers);
		}

		public function render() {
			return $this->data;
		}
	}

	class TemplateResponse extends Response {
		public function __construct(
			public string $appName,
			public string $templateName,
			public array $params = [],
			public string $renderAs = 'user',
			int $status = Http::STATUS_OK,
		) {
			parent::__construct($status);
		}
	}

	class RedirectResponse extends Response {
		public function __construct(private string $redirectURL, int $status = Http::STATUS_SEE_OTHER) {
			parent::__construct($status);
			$this->addHeader('Location', $redirectURL);
		}

		public function getRedirectURL(): string {
			return $this->redirectURL;
		}
	}

	interface IOutput {
		public function setOutput($out);
		public function setHeader($header);
		public function getHttpResponseCode();
	}

	interface ICallbackResponse {
		public function callback(IOutput $output);
	}
}

namespace OCP\AppFramework\Bootstrap {
	interface IRegistrationContext {
		/** @psalm-param class-string<\OCP\Collaboration\Reference\IReferenceProvider> $class */
		public function registerReferenceProvider(string $class): void;
		public function registerEventListener(string $event, string $listener, int $priority = 0): void;
	}

	interface IBootContext {
	}

	interface IBootstrap {
		public function register(IRegistrationContext $context): void;
		public function boot(IBootContext $context): void;
	}
}

namespace OCP\AppFramework {
	abstract class OCSController extends Controller {
		public const RESPOND_UNAUTHORISED = 997;
		public const RESPOND_SERVER_ERROR = 996;
		public const RESPOND_NOT_FOUND = 998;
		public const RESPOND_UNKNOWN_ERROR = 999;

		public function __construct(string $appName, \OCP\IRequest $request, string $corsMethods = 'PUT, POST, GET, DELETE, PATCH',
			string $corsAllowedHeaders = 'Authorization, Content-Type, Accept, OCS-APIRequest', int $corsMaxAge = 1728000) {
			parent::__construct($appName, $request);
		}
	}

	class App {
		public function __construct(string $appName, array $urlParams = []) {
		}
	}
}

namespace OCP\EventDispatcher {
	class Event {
	}

	/** @template T of Event */
	interface IEventListener {
		public function handle(Event $event): void;
	}
}

// The reference-provider API as Nextcloud 31 ships it (lib/public/Collaboration/Reference).
namespace OCP\Collaboration\Reference {
	interface IReference {
	}

	interface IReferenceProvider {
		public function matchReference(string $referenceText): bool;
		public function resolveReference(string $referenceText): ?IReference;
		public function getCachePrefix(string $referenceId): string;
		public function getCacheKey(string $referenceId): ?string;
	}

	interface IDiscoverableReferenceProvider extends IReferenceProvider {
		public function getId(): string;
		public function getTitle(): string;
		public function getOrder(): int;
		public function getIconUrl(): string;
		public function jsonSerialize(): array;
	}

	interface ISearchableReferenceProvider extends IDiscoverableReferenceProvider {
		public function getSupportedSearchProviderIds(): array;
	}

	abstract class ADiscoverableReferenceProvider implements IDiscoverableReferenceProvider, \JsonSerializable {
		public function jsonSerialize(): array {
			$json = [
				'id' => $this->getId(),
				'title' => $this->getTitle(),
				'icon_url' => $this->getIconUrl(),
				'order' => $this->getOrder(),
			];
			if ($this instanceof ISearchableReferenceProvider) {
				$json['search_providers_ids'] = $this->getSupportedSearchProviderIds();
			}
			return $json;
		}
	}

	/** Dispatched by a page that renders references or offers the Smart Picker. */
	class RenderReferenceEvent extends \OCP\EventDispatcher\Event {
	}
}

namespace OCP\Security\CSP {
	/** Lets an app add to the default policy of every AppFramework page (Nextcloud merges it). */
	class AddContentSecurityPolicyEvent extends \OCP\EventDispatcher\Event {
		/** @var list<\OCP\AppFramework\Http\EmptyContentSecurityPolicy> what was added, in order */
		public array $added = [];

		public function addPolicy(\OCP\AppFramework\Http\EmptyContentSecurityPolicy $csp): void {
			$this->added[] = $csp;
		}
	}
}

namespace OCP\Settings {
	/** An admin or personal settings form (Nextcloud's lib/public/Settings/ISettings.php). */
	interface ISettings {
		public function getForm();
		public function getSection();
		public function getPriority();
	}
}
