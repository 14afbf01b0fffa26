<?php

declare(strict_types=1);

namespace OCA\Tamebi\Tests\Unit;

use OCA\Tamebi\Controller\AssistantsController;
use OCA\Tamebi\Controller\RegistryController;
use OCA\Tamebi\Http\OcsAnswers;
use OCA\Tamebi\Service\AppSettings;
use OCA\Tamebi\Service\Orchestrator;
use OCA\Tamebi\Service\Registry\AdminRegistry;
use OCA\Tamebi\Service\Registry\MemberOf;
use OCA\Tamebi\Service\Registry\PersonalAssistants;
use OCA\Tamebi\Service\Registry\RegistryError;
use OCA\Tamebi\Service\Registry\Validation;
use OCA\Tamebi\Service\RequestBody;
use OCA\Tamebi\Tests\RealOrchestrator;
use OCA\Tamebi\Tests\Stubs\CurlClientService;
use OCA\Tamebi\Tests\Stubs\FakeClock;
use OCA\Tamebi\Tests\Stubs\FakeGroupManager;
use OCA\Tamebi\Tests\Stubs\FakeUser;
use OCA\Tamebi\Tests\Stubs\FakeUserSession;
use OCA\Tamebi\Tests\Stubs\MemoryAppConfig;
use OCP\AppFramework\Http\DataResponse;

/**
 * The registry's OCS routes (issue #30): admin routes refuse non-admins (403, nothing signed or
 * sent), entries are validated with our own messages (bad URL, duplicate name, unknown pattern:
 * 400), changes reach the REAL orchestrator binary over the admin-signed route, a Nextcloud-facing
 * server gets its audience, and a person's assistants go over their own signature with their
 * groups, the orchestrator refusing a tool list beyond the admin's ceiling.
 */
final class RegistryTest extends AppTestCase {
	private ?RealOrchestrator $real = null;
	private AppSettings $realSettings;

	protected function tearDown(): void {
		$this->real?->stop();
		parent::tearDown();
	}

	private function realOrchestrator(): Orchestrator {
		$this->real ??= new RealOrchestrator(self::PROXY, self::SIGNING);
		$this->realSettings = new AppSettings(new MemoryAppConfig());
		$this->realSettings->set(AppSettings::ORCHESTRATOR_URL, $this->real->url);
		$this->realSettings->set(AppSettings::PROXY_SECRET, self::PROXY);
		$this->realSettings->set(AppSettings::SIGNING_SECRET, self::SIGNING);
		return new Orchestrator($this->realSettings, new CurlClientService(), new FakeClock());
	}

	/** @param array<string, mixed>|null $body */
	private function controller(string $uid, array $admins, Orchestrator $orchestrator, ?array $body = null): RegistryController {
		$file = tempnam(sys_get_temp_dir(), 'tamebi-body-');
		file_put_contents($file, $body === null ? '' : json_encode($body));
		$answers = new OcsAnswers(new FakeUserSession(new FakeUser($uid)), new FakeGroupManager($admins), $this->logger);
		$settings = $orchestrator === $this->orchestrator ? $this->settings : $this->realSettings;
		return new RegistryController($this->request, new AdminRegistry($orchestrator, $settings), $answers, new RequestBody($file));
	}

	/**
	 * @param list<string> $groups
	 * @param array<string, mixed>|null $body
	 */
	private function assistants(string $uid, array $groups, Orchestrator $orchestrator, ?array $body = null): AssistantsController {
		$file = tempnam(sys_get_temp_dir(), 'tamebi-body-');
		file_put_contents($file, $body === null ? '' : json_encode($body));
		$session = new FakeUserSession(new FakeUser($uid));
		$groupManager = new FakeGroupManager([], [$uid => $groups]);
		$answers = new OcsAnswers($session, $groupManager, $this->logger);
		return new AssistantsController($this->request, new PersonalAssistants($orchestrator, new MemberOf($session, $groupManager)), $answers, new RequestBody($file));
	}

	private static function assertError(DataResponse $r, int $status, string $code, string $contains = ''): void {
		self::assertSame($status, $r->getStatus(), json_encode($r->getData()));
		self::assertSame($code, $r->getData()['error']);
		if ($contains !== '') {
			self::assertStringContainsString($contains, $r->getData()['message']);
		}
	}

	public function testANonAdminIsRefusedOnEveryAdminRouteAndNothingIsSent(): void {
		$calls = [
			fn (RegistryController $c) => $c->servers(),
			fn (RegistryController $c) => $c->createServer(),
			fn (RegistryController $c) => $c->updateServer('probe'),
			fn (RegistryController $c) => $c->deleteServer('probe'),
			fn (RegistryController $c) => $c->assistants(),
			fn (RegistryController $c) => $c->createAssistant(),
			fn (RegistryController $c) => $c->updateAssistant('x'),
			fn (RegistryController $c) => $c->deleteAssistant('x'),
			fn (RegistryController $c) => $c->approve('u-0123456789abcdef0123456789abcdef'),
			fn (RegistryController $c) => $c->policy(),
			fn (RegistryController $c) => $c->setPolicy(),
		];
		foreach ($calls as $call) {
			self::assertError($call($this->controller('alice', ['root'], $this->orchestrator, ['name' => 'probe'])), 403, 'forbidden');
		}
		self::assertSame([], $this->orchestratorRequests(), 'nothing was signed or sent for a non-admin');
	}

	public function testEntriesAreValidatedWithOurOwnMessages(): void {
		$real = $this->realOrchestrator();
		$bad = [
			[['name' => 'probe', 'url' => 'not a url', 'auth' => 'none'], 'absolute http(s) URL'],
			[['name' => 'probe', 'url' => 'ftp://x.example/mcp', 'auth' => 'none'], 'absolute http(s) URL'],
			[['name' => 'probe', 'url' => 'http://x.example/mcp?x=1', 'auth' => 'none'], 'absolute http(s) URL'],
			[['name' => 'probe', 'url' => 'http://x.example/mcp', 'auth' => 'token'], 'auth must be'],
			[['name' => 'no spaces', 'url' => 'http://x.example/mcp', 'auth' => 'none'], 'server name'],
			[['name' => 'nextcloud', 'url' => 'http://x.example/mcp', 'auth' => 'none'], 'already exists'],
			[['name' => 'probe', 'url' => 'http://x.example/mcp', 'auth' => 'nextcloud', 'trust' => 'reads'], 'trust option'],
		];
		foreach ($bad as [$body, $message]) {
			self::assertError($this->controller('root', ['root'], $real, $body)->createServer(), 400, 'invalid_request', $message);
		}
		// Registered for real, then the same name again is a duplicate.
		$ok = ['name' => 'probe', 'url' => 'http://127.0.0.1:9/mcp', 'auth' => 'none'];
		self::assertSame(200, $this->controller('root', ['root'], $real, $ok)->createServer()->getStatus());
		self::assertError($this->controller('root', ['root'], $real, $ok)->createServer(), 400, 'invalid_request', 'already exists');

		$assistant = ['name' => 'planner', 'description' => 'Calendar only.', 'tools' => ['probe/calendar_*']];
		foreach ([
			[['tools' => ['mail/*']] + $assistant, 'Unknown tool pattern "mail/*": no server is named "mail"'],
			[['tools' => ['no-slash']] + $assistant, 'Unknown tool pattern "no-slash"'],
			[['tools' => ['probe/a b']] + $assistant, 'Unknown tool pattern'],
			[['description' => ''] + $assistant, 'description'],
		] as [$body, $message]) {
			self::assertError($this->controller('root', ['root'], $real, $body)->createAssistant(), 400, 'invalid_request', $message);
		}
		$created = $this->controller('root', ['root'], $real, $assistant)->createAssistant();
		self::assertSame(200, $created->getStatus(), json_encode($created->getData()));
		self::assertSame('planner', $created->getData()['assistant']['name']);
		self::assertError($this->controller('root', ['root'], $real, $assistant)->createAssistant(), 400, 'invalid_request', 'already exists');
		// The environment's assistant (the built-in default) is read-only: the orchestrator's 409.
		self::assertError($this->controller('root', ['root'], $real, ['description' => 'x', 'tools' => []] + ['name' => 'default'])->updateAssistant('default'), 409, 'conflict');
	}

	public function testChangesReachTheOrchestratorAdminSignedAndANextcloudServerGetsItsAudience(): void {
		$real = $this->realOrchestrator();
		$server = ['name' => 'files2', 'url' => 'http://127.0.0.1:9/files2/mcp', 'auth' => 'nextcloud'];
		self::assertSame(200, $this->controller('root', ['root'], $real, $server)->createServer()->getStatus());
		self::assertSame(['files2' => 'http://127.0.0.1:9/files2/mcp'], json_decode($this->realSettings->get(AppSettings::MCP_AUDIENCES), true),
			'its tokens\' audience, as occ tamebi:setup does for mcp-nextcloud');
		$listed = $this->controller('root', ['root'], $real)->servers()->getData()['servers'];
		$byName = array_column($listed, null, 'name');
		self::assertSame('environment', $byName['nextcloud']['source']);
		self::assertSame('admin', $byName['files2']['source']);
		self::assertSame('nextcloud', $byName['files2']['auth']);
		// The environment's server is read-only.
		self::assertError($this->controller('root', ['root'], $real)->deleteServer('nextcloud'), 409, 'conflict');
		self::assertSame(200, $this->controller('root', ['root'], $real)->deleteServer('files2')->getStatus());
		self::assertSame('', $this->realSettings->get(AppSettings::MCP_AUDIENCES), 'the audience goes with it');
		self::assertError($this->controller('root', ['root'], $real)->deleteServer('files2'), 404, 'not_found');
	}

	public function testAPersonsAssistantsGoWithTheirSignatureAndGroupsAndNeverBeyondTheCeiling(): void {
		$real = $this->realOrchestrator();
		$mine = ['name' => 'My helper', 'instructions' => 'Be brief.', 'tools' => ['nextcloud/calendar_list_events']];
		// The admin allows personal assistants nothing yet: the orchestrator refuses, in our words.
		self::assertError($this->assistants('alice', ['team'], $real, $mine)->create(), 400, 'refused', 'your administrator allows');
		$policy = $this->controller('root', ['root'], $real, ['personalTools' => ['nextcloud/calendar_*']])->setPolicy();
		self::assertSame(200, $policy->getStatus(), json_encode($policy->getData()));
		self::assertError($this->assistants('alice', ['team'], $real, ['tools' => ['nextcloud/*']] + $mine)->create(), 400, 'refused');
		$created = $this->assistants('alice', ['team'], $real, $mine)->create();
		self::assertSame(200, $created->getStatus(), json_encode($created->getData()));
		$id = $created->getData()['assistant']['id'];
		// Shared only to a group of hers; bob sees it once an admin approved it.
		self::assertError($this->assistants('alice', ['team'], $real, ['group' => 'board'])->share($id), 400, 'invalid_request', 'member');
		self::assertSame(200, $this->assistants('alice', ['team'], $real, ['group' => 'team'])->share($id)->getStatus());
		$bobs = fn (): array => array_column($this->assistants('bob', ['team'], $real)->index()->getData()['assistants'], 'name');
		self::assertNotContains($id, $bobs());
		self::assertSame(200, $this->controller('root', ['root'], $real, ['version' => 1])->approve($id)->getStatus());
		self::assertContains($id, $bobs());
		self::assertNotContains($id, array_column($this->assistants('carol', [], $real)->index()->getData()['assistants'], 'name'));
		// Bob cannot touch it: not found, like one that does not exist.
		self::assertError($this->assistants('bob', ['team'], $real)->destroy($id), 404, 'not_found');
		self::assertSame(200, $this->assistants('alice', [], $real)->destroy($id)->getStatus());
	}

	public function testTheGroupsGoSignedInTheQueryOfChatAndTheAssistantList(): void {
		$session = new FakeUserSession(new FakeUser('alice'));
		$memberOf = new MemberOf($session, new FakeGroupManager([], ['alice' => ['team', 'a b/c', "bad\ngroup"]]));
		self::assertSame(['a b/c', 'team'], $memberOf->groupIds(), 'a group id the orchestrator would refuse is left out');
		self::assertSame('/v1/chat?lang=de&group=a%20b%2Fc&group=team', $memberOf->withGroups('/v1/chat?lang=de'));
		self::assertSame('/v1/assistants', (new MemberOf($session, new FakeGroupManager()))->withGroups('/v1/assistants'));
	}

	/** The cases the island's preview (island/src/registry.ts) reproduces too. */
	public function testPatternPreviewReproducesTheSharedCases(): void {
		$doc = json_decode((string)file_get_contents(__DIR__ . '/../../../testdata/pattern-preview.json'), true);
		self::assertGreaterThan(5, count($doc['cases']));
		foreach ($doc['cases'] as $case) {
			self::assertSame($case['matches'], Validation::matches($case['pattern'], $case['tools']), $case['pattern']);
		}
	}

	public function testPatternPreviewMatchesTheOrchestratorsGlob(): void {
		$tools = ['probe' => ['calendar_list_events', 'files_list'], 'nextcloud' => null];
		self::assertSame(['probe/calendar_list_events'], Validation::matches('probe/calendar_*', $tools));
		// The orchestrator's own tools are not listed here: a pattern may name them unchecked.
		self::assertSame(['probe/calendar_list_events', 'probe/files_list', 'tamebi/*_*'], Validation::matches('*/*_*', ['probe' => $tools['probe']]));
		self::assertSame([], Validation::matches('probe/mail_*', $tools));
		$this->expectException(RegistryError::class);
		Validation::patterns(['probe/mail_*'], $tools);
	}
}
