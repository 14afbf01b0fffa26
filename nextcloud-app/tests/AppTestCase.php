<?php

declare(strict_types=1);

namespace OCA\Tamebi\Tests\Unit;

use OCA\Tamebi\Controller\ApiController;
use OCA\Tamebi\Service\AppSettings;
use OCA\Tamebi\Service\OidcFlow;
use OCA\Tamebi\Service\Orchestrator;
use OCA\Tamebi\Service\Relay;
use OCA\Tamebi\Service\RequestBody;
use OCA\Tamebi\Service\TokenService;
use OCA\Tamebi\Tests\FakeUpstream;
use OCA\Tamebi\Tests\Stubs\CurlClientService;
use OCA\Tamebi\Tests\Stubs\FakeClock;
use OCA\Tamebi\Tests\Stubs\FakeConfig;
use OCA\Tamebi\Tests\Stubs\FakeL10N;
use OCA\Tamebi\Tests\Stubs\FakeRequest;
use OCA\Tamebi\Tests\Stubs\FakeSession;
use OCA\Tamebi\Tests\Stubs\FakeUrlGenerator;
use OCA\Tamebi\Tests\Stubs\FakeUser;
use OCA\Tamebi\Tests\Stubs\FakeUserSession;
use OCA\Tamebi\Tests\Stubs\MemoryAppConfig;
use OCA\Tamebi\Tests\Stubs\RecordingLogger;
use PHPUnit\Framework\TestCase;

/** Wires the app's real services to a real fake upstream, the way Nextcloud's container would. */
abstract class AppTestCase extends TestCase {
	protected const PROXY = 'test-proxy-secret-0123456789abcdef0123456789ab';
	protected const SIGNING = 'test-signing-secret-0123456789abcdef0123456789';

	protected FakeUpstream $upstream;
	protected MemoryAppConfig $appConfig;
	protected AppSettings $settings;
	protected FakeSession $session;
	protected FakeClock $clock;
	protected RecordingLogger $logger;
	protected FakeRequest $request;
	protected TokenService $tokens;
	protected OidcFlow $flow;
	protected Orchestrator $orchestrator;
	protected Relay $relay;
	/** The person's language: English unless a test sets another before setUp() runs. */
	protected string $language = 'en';

	protected function setUp(): void {
		$this->upstream = new FakeUpstream(self::PROXY, self::SIGNING);
		$this->appConfig = new MemoryAppConfig();
		$this->settings = new AppSettings($this->appConfig);
		$this->settings->set(AppSettings::ORCHESTRATOR_URL, $this->upstream->url);
		$this->settings->set(AppSettings::MCP_URL, 'https://mcp.example.test/mcp');
		$this->settings->set(AppSettings::PROXY_SECRET, self::PROXY);
		$this->settings->set(AppSettings::SIGNING_SECRET, self::SIGNING);
		$this->settings->set(AppSettings::OIDC_CLIENT_ID, 'client-1');
		$this->settings->set(AppSettings::OIDC_CLIENT_SECRET, 'client-secret-1');
		$this->session = new FakeSession();
		$this->clock = new FakeClock();
		$this->logger = new RecordingLogger();
		$this->request = new FakeRequest('req-123', [
			'Cookie' => 'ocabc=live-session; oc_sessionPassphrase=pp; __Host-nc_sameSiteCookiestrict=true; tracker=evil; _ga=123',
		]);
		$clients = new CurlClientService();
		$this->flow = new OidcFlow($this->settings, $clients, new FakeUrlGenerator($this->upstream->url), $this->clock);
		$this->tokens = new TokenService($this->session, $this->request, new FakeConfig(['instanceid' => 'ocabc']),
			$this->flow, $this->clock, $this->logger, $this->settings);
		$this->orchestrator = new Orchestrator($this->settings, $clients, $this->clock);
		$this->relay = new Relay($this->orchestrator, $this->tokens, new FakeUserSession(new FakeUser('alice', 'Alice')),
			$this->request, $this->logger, new FakeL10N($this->language));
	}

	protected function tearDown(): void {
		$this->upstream->stop();
	}

	protected function api(string $body = ''): ApiController {
		$file = tempnam(sys_get_temp_dir(), 'tamebi-body-');
		file_put_contents($file, $body);
		return new ApiController($this->request, $this->relay, new RequestBody($file));
	}

	/** Requests the fake orchestrator received (the oidc endpoints excluded). */
	protected function orchestratorRequests(): array {
		return array_values(array_filter($this->upstream->requests(), fn ($r) => str_starts_with($r['uri'], '/v1/')));
	}

	protected function giveToken(string $access = 'access-live', int $ttl = 600, string $audience = 'nextcloud'): void {
		$this->session->data[TokenService::SESSION_KEY][$audience] = ['a' => $access, 'r' => 'refresh-0', 'e' => $this->clock->getTime() + $ttl];
	}
}
