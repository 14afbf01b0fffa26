<?php

declare(strict_types=1);

namespace OCA\Tamebi\Tests\Unit;

use OCA\Talk\Model\BotServerMapper;
use OCA\Tamebi\Listener\TalkEnabledListener;
use OCA\Tamebi\Service\AppSettings;
use OCA\Tamebi\Service\Talk\TalkBot;
use OCA\Tamebi\Service\Talk\TalkUnavailable;
use OCA\Tamebi\Tests\Stubs\FakeAppManager;
use OCA\Tamebi\Tests\Stubs\FakeUrlGenerator;
use OCA\Tamebi\Tests\Stubs\MemoryAppConfig;
use OCA\Tamebi\Tests\Stubs\RecordingLogger;
use OCP\App\Events\AppEnableEvent;
use PHPUnit\Framework\TestCase;

/** `occ tamebi:setup --talk`'s registration in Talk's bot registry (spreed's BotServerMapper). */
final class TalkBotTest extends TestCase {
	private AppSettings $settings;
	private BotServerMapper $mapper;

	protected function setUp(): void {
		$this->settings = new AppSettings(new MemoryAppConfig());
		$this->mapper = new BotServerMapper();
	}

	private function bot(array $apps = ['spreed', 'tamebi']): TalkBot {
		return new TalkBot($this->settings, new FakeAppManager($apps), new FakeUrlGenerator('https://cloud.example.com'), $this->mapper);
	}

	public function testInstallsTheBotAsTalkInstallDoesThenChangesNothing(): void {
		$this->assertSame(['action' => 'installed', 'id' => 1], $this->bot()->register());
		$row = $this->mapper->rows[1];
		$url = 'https://cloud.example.com/ocs/v2.php/apps/tamebi/api/v1/talk/webhook';
		$this->assertSame('Tamebi', $row->getName());
		$this->assertSame($url, $row->getUrl());
		$this->assertSame(sha1($url), $row->getUrlHash());
		$this->assertSame(3, $row->getFeatures(), 'webhook + response');
		$this->assertSame(1, $row->getState());
		$secret = $this->settings->get(AppSettings::TALK_BOT_SECRET);
		$this->assertSame(64, strlen($secret));
		$this->assertSame($secret, $row->getSecret());

		$this->assertSame(['action' => 'unchanged', 'id' => 1], $this->bot()->register());
		$this->assertSame(1, $this->mapper->writes);
	}

	public function testAnUpdateKeepsTheBotAndRestoresItsSettings(): void {
		$this->bot()->register();
		$row = $this->mapper->rows[1];
		$row->setState(0);
		$row->setFeatures(1);
		$row->setSecret(str_repeat('s', 64));
		$this->assertSame(['action' => 'updated', 'id' => 1], $this->bot()->register());
		$this->assertSame(3, $this->mapper->rows[1]->getFeatures());
		$this->assertSame(1, $this->mapper->rows[1]->getState());
		$this->assertSame($this->settings->get(AppSettings::TALK_BOT_SECRET), $this->mapper->rows[1]->getSecret());
		$this->assertCount(1, $this->mapper->rows);
	}

	public function testWithoutTalkNothingChanges(): void {
		try {
			$this->bot(['tamebi'])->register();
			$this->fail('registered without Talk');
		} catch (TalkUnavailable) {
		}
		$this->assertSame([], $this->mapper->rows);
		$this->assertSame('', $this->settings->get(AppSettings::TALK_BOT_SECRET), 'no secret was made');
		$this->assertFalse($this->bot(['tamebi'])->refresh());
	}

	public function testTalkEnabledLaterRegistersOnlyABotThatWasSetUpBefore(): void {
		$listener = new TalkEnabledListener($this->bot(), new RecordingLogger());
		$listener->handle(new AppEnableEvent('spreed'));
		$this->assertSame([], $this->mapper->rows, 'nobody asked for a bot');

		$this->bot()->register();
		$this->mapper->rows = []; // Talk removed and installed again: its table is new
		$listener->handle(new AppEnableEvent('files'));
		$this->assertSame([], $this->mapper->rows);
		$listener->handle(new AppEnableEvent('spreed'));
		$this->assertCount(1, $this->mapper->rows);
	}
}
