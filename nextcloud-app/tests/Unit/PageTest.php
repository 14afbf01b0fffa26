<?php

declare(strict_types=1);

namespace OCA\Tamebi\Tests\Unit;

use OCA\Tamebi\Controller\PageController;
use OCA\Tamebi\Service\IslandState;
use OCA\Tamebi\Service\Registry\MemberOf;
use OCA\Tamebi\Tests\Stubs\FakeConfig;
use OCA\Tamebi\Tests\Stubs\FakeGroupManager;
use OCA\Tamebi\Tests\Stubs\FakeInitialState;
use OCA\Tamebi\Tests\Stubs\FakeUrlGenerator;
use OCA\Tamebi\Tests\Stubs\FakeUser;
use OCA\Tamebi\Tests\Stubs\FakeUserSession;
use OCP\Util;

/** The page hands the island its configuration, and never a token. */
final class PageTest extends AppTestCase {
	public function testInitialStateMatchesTheIslandContract(): void {
		$this->giveToken('access-secret-value');
		$state = new FakeInitialState();
		$page = new PageController($this->request, new IslandState(new FakeUserSession(new FakeUser('alice', 'Alice A.')), $state,
			new FakeUrlGenerator('https://cloud.example'), $this->tokens, new FakeConfig()));
		$response = $page->index();
		self::assertSame('main', $response->templateName);
		self::assertSame([
			'apiBase' => '/apps/tamebi/api',
			'frameUrl' => '/apps/tamebi/frame',
			'connectUrl' => '/apps/tamebi/connect',
			'ocsBase' => '/ocs/v2.php/apps/tamebi/api/v1',
			'user' => ['uid' => 'alice', 'displayName' => 'Alice A.'],
			'workspaceConnected' => true,
		], $state->provided['tamebi-config']);
		self::assertStringNotContainsString('access-secret-value', json_encode($state->provided));
		self::assertContains('tamebi/tamebi-island', Util::$scripts);
		self::assertContains('tamebi/tamebi-island', Util::$styles);
	}

	/** Issue #34: times are shown in the person's own time zone (their core/timezone setting). */
	public function testThePersonsTimeZoneGoesToTheIsland(): void {
		foreach (['Europe/Berlin' => ['timeZone' => 'Europe/Berlin'], 'Mars/Olympus' => [], '' => []] as $zone => $expected) {
			$state = new FakeInitialState();
			$config = new FakeConfig([], ['alice' => ['core' => ['timezone' => $zone]]]);
			(new PageController($this->request, new IslandState(new FakeUserSession(new FakeUser('alice', 'Alice')), $state,
				new FakeUrlGenerator('https://cloud.example'), $this->tokens, $config)))->index();
			self::assertSame($expected, array_intersect_key($state->provided['tamebi-config'], ['timeZone' => true]), (string)$zone);
		}
	}

	/** Issue #30: the person's groups, for proposing an assistant to one (none: no entry). */
	public function testThePersonsGroupsGoToTheIsland(): void {
		$session = new FakeUserSession(new FakeUser('alice', 'Alice'));
		foreach ([[['staff', 'a b'], ['a b', 'staff']], [[], null]] as [$groups, $expected]) {
			$state = new FakeInitialState();
			$memberOf = new MemberOf($session, new FakeGroupManager([], ['alice' => $groups]));
			(new PageController($this->request, new IslandState($session, $state, new FakeUrlGenerator('https://cloud.example'), $this->tokens,
				new FakeConfig(), $memberOf)))->index();
			self::assertSame($expected, $state->provided['tamebi-config']['groups'] ?? null);
		}
	}
}
