<?php

declare(strict_types=1);

namespace OCA\Tamebi\Tests\Unit;

use OCA\Tamebi\Http\RelayResponse;
use OCA\Tamebi\Service\AppSettings;
use OCA\Tamebi\Tests\RealOrchestrator;
use OCA\Tamebi\Tests\Stubs\RecordingOutput;

/**
 * The real orchestrator binary's refusal codes through the app: a user message sent again under
 * the id of an earlier one is the orchestrator's own 409 `message_id_taken`, and the browser gets
 * the app's text for that code, not the one every 409 used to get.
 */
final class RealRefusalTest extends AppTestCase {
	private ?RealOrchestrator $real = null;

	protected function tearDown(): void {
		$this->real?->stop();
		parent::tearDown();
	}

	/** Sends one user message of conversation `c-reuse` through the app's chat route. */
	private function send(string $id, string $text): \OCP\AppFramework\Http\Response {
		return $this->api(json_encode(['id' => 'c-reuse', 'messages' => [
			['id' => $id, 'role' => 'user', 'parts' => [['type' => 'text', 'text' => $text]]],
		]]))->chat();
	}

	public function testAReusedMessageIdShowsTheTextOfItsCode(): void {
		$this->real = new RealOrchestrator(self::PROXY, self::SIGNING);
		$this->settings->set(AppSettings::ORCHESTRATOR_URL, $this->real->url);
		$this->giveToken();
		foreach (['m1' => 'first words', 'm2' => 'second words'] as $id => $text) {
			$response = $this->send($id, $text);
			self::assertInstanceOf(RelayResponse::class, $response, $response->render());
			// The model is unreachable: the turn ends with an error part, its user message stored.
			$r = new \ReflectionProperty(RelayResponse::class, 'endOutputBuffers');
			$r->setValue($response, false);
			$response->callback(new RecordingOutput());
		}
		$refused = $this->send('m1', 'other words');
		self::assertSame(409, $refused->getStatus());
		self::assertSame(['error' => [
			'message' => 'Another message of this conversation already has this id. Send the message under a new id.',
			'requestId' => 'req-123',
			'code' => 'message_id_taken',
		]], $refused->getData());
	}
}
