<?php

declare(strict_types=1);

namespace OCA\Tamebi\Tests\Unit;

use OCA\Tamebi\Http\RelayResponse;
use OCA\Tamebi\Service\AdminStatus;
use OCA\Tamebi\Service\Relay;
use OCA\Tamebi\Tests\Stubs\FakeGroupManager;
use OCA\Tamebi\Tests\Stubs\FakeL10N;
use OCA\Tamebi\Tests\Stubs\FakeUser;
use OCA\Tamebi\Tests\Stubs\FakeUserSession;
use OCP\AppFramework\Http\JSONResponse;

/**
 * Issue #34: a person whose Nextcloud is set to German reads the app's texts in German, and the
 * orchestrator is told their language (the signed `lang` query of a chat turn), so the model's
 * answers follow it.
 */
final class LanguageTest extends AppTestCase {
	protected function setUp(): void {
		$this->language = 'de';
		parent::setUp();
	}

	public function testAChatTurnCarriesThePersonsLanguageSignedInItsQuery(): void {
		$this->giveToken();
		// The fake orchestrator holds a stream until released; nothing here reads it.
		$this->upstream->release();
		$response = $this->api('{"id":"c1","messages":[{"id":"m1","role":"user","parts":[]}]}')->chat();
		// The fake orchestrator checks G1 over the path and query as they arrived: a 200 is a
		// signature that covers `lang`.
		self::assertInstanceOf(RelayResponse::class, $response);
		self::assertSame(200, $response->getStatus());
		$sent = $this->orchestratorRequests();
		self::assertSame('POST /v1/chat?lang=de', $sent[0]['method'] . ' ' . $sent[0]['uri']);
	}

	public function testErrorsAreInThePersonsLanguage(): void {
		$this->giveToken();
		$response = $this->api()->conversation('other');
		self::assertInstanceOf(JSONResponse::class, $response);
		self::assertSame(404, $response->getStatus());
		self::assertSame(['error' => ['message' => 'Nicht gefunden.', 'requestId' => 'req-123']], $response->getData());
		$refused = $this->api('{"id":"refuse-409-message_id_taken","messages":[]}')->chat();
		self::assertSame('Eine andere Nachricht dieser Unterhaltung hat bereits diese ID. Sende die Nachricht unter einer neuen ID.',
			$refused->getData()['error']['message']);
		self::assertSame('message_id_taken', $refused->getData()['error']['code']);
	}

	public function testNextcloudLanguageCodesBecomeBcp47OrNothing(): void {
		foreach (['de' => 'de', 'de_DE' => 'de-DE', 'pt_BR' => 'pt-BR', 'sr@latin' => 'sr-Latn', 'es_419' => 'es-419',
			'en' => 'en', 'zh_Hant_TW' => 'zh-Hant-TW', 'de_DE_1996' => 'de-DE-1996', 'ca@valencia' => null, 'x' => null,
			'' => null, 'de_AB_CD' => null, 'en_US_x' => null, 'de_DEUTSCHLAND' => null] as $code => $tag) {
			$relay = new Relay($this->orchestrator, $this->tokens, new FakeUserSession(new FakeUser('alice')), $this->request,
				$this->logger, new FakeL10N($code));
			self::assertSame($tag, $relay->language(), $code);
			self::assertSame($tag === null ? '' : '?lang=' . $tag, $relay->chatQuery(), $code);
		}
	}

	public function testTheAdminPageTextsAreInTheAdminsLanguage(): void {
		$settings = $this->settings;
		$settings->set(\OCA\Tamebi\Service\AppSettings::ORCHESTRATOR_URL, 'http://127.0.0.1:1');
		$status = new AdminStatus($this->orchestrator, new FakeUserSession(new FakeUser('bob')), new FakeGroupManager([]),
			$this->logger, new FakeL10N('de'));
		self::assertSame('Nur Administratoren können den Status des Orchestrators sehen.', $status->fetch()['error']);
		$admin = new AdminStatus($this->orchestrator, new FakeUserSession(new FakeUser('root')), new FakeGroupManager(['root']),
			$this->logger, new FakeL10N('de'));
		self::assertSame('Der Orchestrator war nicht erreichbar.', $admin->fetch()['error']);
	}

	public function testPluralsAndParametersFollowNextcloudsL10n(): void {
		$german = new FakeL10N('de');
		self::assertSame('ja, aber mit HTTP 500', $german->t('yes, but with HTTP %s', ['500']));
		self::assertSame('Du kannst in 1 Minute wieder senden.', $german->n('You can send again in %n minute.', 'You can send again in %n minutes.', 1));
		self::assertSame('Du kannst in 3 Minuten wieder senden.', $german->n('You can send again in %n minute.', 'You can send again in %n minutes.', 3));
		self::assertSame('Untranslated text', $german->t('Untranslated text'));
	}
}
