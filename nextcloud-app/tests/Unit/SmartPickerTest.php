<?php

declare(strict_types=1);

namespace OCA\Tamebi\Tests\Unit;

use OCA\Tamebi\AppInfo\Application;
use OCA\Tamebi\Listener\FrameCspListener;
use OCA\Tamebi\Listener\RenderReferenceListener;
use OCA\Tamebi\Listener\TalkEnabledListener;
use OCA\Tamebi\Reference\TamebiReferenceProvider;
use OCA\Tamebi\Service\IslandState;
use OCA\Tamebi\Tests\Stubs\FakeConfig;
use OCA\Tamebi\Tests\Stubs\FakeInitialState;
use OCA\Tamebi\Tests\Stubs\FakeL10N;
use OCA\Tamebi\Tests\Stubs\FakeRegistrationContext;
use OCA\Tamebi\Tests\Stubs\FakeUrlGenerator;
use OCA\Tamebi\Tests\Stubs\FakeUser;
use OCA\Tamebi\Tests\Stubs\FakeUserSession;
use OCP\App\Events\AppEnableEvent;
use OCP\Collaboration\Reference\IDiscoverableReferenceProvider;
use OCP\Collaboration\Reference\RenderReferenceEvent;
use OCP\EventDispatcher\Event;
use OCP\Security\CSP\AddContentSecurityPolicyEvent;
use OCP\Util;

/** Issue #29: "Ask Tamebi" in Nextcloud's Smart Picker. */
final class SmartPickerTest extends AppTestCase {
	protected function setUp(): void {
		parent::setUp();
		Util::$scripts = [];
		Util::$styles = [];
	}

	private function provider(string $language = 'en'): TamebiReferenceProvider {
		return new TamebiReferenceProvider(new FakeL10N($language), new FakeUrlGenerator('https://cloud.example'));
	}

	public function testTheAppRegistersTheProviderAndTheScriptLoader(): void {
		$context = new FakeRegistrationContext();
		(new Application())->register($context);
		self::assertSame([TamebiReferenceProvider::class], $context->referenceProviders);
		self::assertSame([
			[RenderReferenceEvent::class, RenderReferenceListener::class, 0],
			[AddContentSecurityPolicyEvent::class, FrameCspListener::class, 0],
			// The Talk bot's (issue #29): register the bot again when Talk is enabled after Tamebi.
			[AppEnableEvent::class, TalkEnabledListener::class, 0],
		], $context->listeners);
	}

	/** What the Smart Picker lists: id (the picker element's id in the island), title, icon, order. */
	public function testTheProviderIsDiscoverableUnderTheIslandsId(): void {
		$provider = $this->provider();
		self::assertInstanceOf(IDiscoverableReferenceProvider::class, $provider);
		self::assertSame([
			'id' => 'tamebi',
			'title' => 'Ask Tamebi',
			'icon_url' => 'https://cloud.example/apps/tamebi/img/app-dark.svg',
			'order' => 40,
		], $provider->jsonSerialize());
		self::assertSame('Tamebi fragen', $this->provider('de')->getTitle());
		// The id the island registers its picker element under (island/src/picker/register.ts).
		$register = (string)file_get_contents(__DIR__ . '/../../../island/src/picker/register.ts');
		self::assertStringContainsString("PICKER_PROVIDER_ID = 'tamebi'", $register);
	}

	/** It offers no search and resolves no link: a pasted URL is never ours to fetch or preview. */
	public function testItNeverMatchesOrResolvesALink(): void {
		$provider = $this->provider();
		$links = [
			'https://cloud.example/apps/tamebi/',
			'https://cloud.example/apps/tamebi/api/conversations/c1',
			'https://cloud.example/index.php/apps/files/?fileid=12',
			'https://evil.example/',
			'tamebi',
			'',
		];
		foreach ($links as $link) {
			self::assertFalse($provider->matchReference($link), $link);
			self::assertNull($provider->resolveReference($link), $link);
		}
		self::assertArrayNotHasKey('search_providers_ids', $provider->jsonSerialize());
	}

	public function testAPageThatRendersReferencesGetsTheIslandForItsPerson(): void {
		$state = new FakeInitialState();
		$listener = new RenderReferenceListener($this->island(new FakeUser('alice', 'Alice A.'), $state));
		$listener->handle(new Event());
		self::assertSame([], Util::$scripts, 'another event loads nothing');
		$listener->handle(new RenderReferenceEvent());
		self::assertSame(['tamebi/tamebi-island'], Util::$scripts);
		self::assertSame(['tamebi/tamebi-island'], Util::$styles);
		self::assertSame(['uid' => 'alice', 'displayName' => 'Alice A.'], $state->provided['tamebi-config']['user']);
		self::assertSame('/apps/tamebi/api', $state->provided['tamebi-config']['apiBase']);
	}

	public function testAPageWithoutAPersonGetsNothing(): void {
		$state = new FakeInitialState();
		(new RenderReferenceListener($this->island(null, $state)))->handle(new RenderReferenceEvent());
		self::assertSame([], Util::$scripts);
		self::assertSame([], $state->provided);
	}

	/** Frames of the frame route (on the Tamebi page and in the picker), and of nothing else. */
	public function testPagesMayFrameTheFrameRouteAndNothingElse(): void {
		$listener = new FrameCspListener(new FakeUrlGenerator('https://cloud.example'));
		$event = new AddContentSecurityPolicyEvent();
		$listener->handle(new RenderReferenceEvent());
		$listener->handle($event);
		self::assertCount(1, $event->added);
		self::assertSame(['https://cloud.example/apps/tamebi/frame'], $event->added[0]->getAllowedFrameDomains());
		self::assertStringContainsString('frame-src https://cloud.example/apps/tamebi/frame;', $event->added[0]->buildPolicy());
	}

	private function island(?FakeUser $user, FakeInitialState $state): IslandState {
		return new IslandState(new FakeUserSession($user), $state, new FakeUrlGenerator('https://cloud.example'), $this->tokens, new FakeConfig());
	}
}
