<?php

declare(strict_types=1);

namespace OCA\Tamebi\Tests\Unit;

use OCA\Tamebi\Http\ApiError;
use OCA\Tamebi\Http\OcsAnswers;
use OCA\Tamebi\Service\Mail\MailError;
use OCA\Tamebi\Tests\Stubs\FakeGroupManager;
use OCA\Tamebi\Tests\Stubs\FakeUser;
use OCA\Tamebi\Tests\Stubs\FakeUserSession;
use OCA\Tamebi\Tests\Stubs\RecordingLogger;
use PHPUnit\Framework\TestCase;

/**
 * The one answer shape of the app's OCS routes: the route runs as the session user and nobody
 * else, admin routes ask IGroupManager again, and every failure is `{error, message}` with its
 * status, a backend's own words never among them.
 */
final class OcsAnswersTest extends TestCase {
	private RecordingLogger $logger;

	protected function setUp(): void {
		$this->logger = new RecordingLogger();
	}

	private function answers(?string $uid, array $admins = []): OcsAnswers {
		return new OcsAnswers(new FakeUserSession($uid === null ? null : new FakeUser($uid)), new FakeGroupManager($admins), $this->logger);
	}

	public function testTheRouteRunsAsTheSessionUser(): void {
		$response = $this->answers('alice')->forUser(fn (string $uid): array => ['uid' => $uid]);
		self::assertSame(200, $response->getStatus());
		self::assertSame(['uid' => 'alice'], $response->getData());
	}

	public function testWithoutASessionUserNothingRuns(): void {
		$ran = false;
		$response = $this->answers(null)->forUser(function () use (&$ran): array {
			$ran = true;
			return [];
		});
		self::assertFalse($ran);
		self::assertSame(401, $response->getStatus());
		self::assertSame('unauthenticated', $response->getData()['error']);
	}

	public function testAnApiErrorKeepsItsStatusCodeAndMessage(): void {
		$response = $this->answers('alice')->forUser(fn (): array => throw ApiError::invalid('name must not be empty'));
		self::assertSame(400, $response->getStatus());
		self::assertSame(['error' => 'invalid_request', 'message' => 'name must not be empty'], $response->getData());
		self::assertSame([], $this->logger->lines, 'bad input is not logged as an error');
	}

	public function testAnythingUnexpectedIsAFixedInternalErrorAndLoggedWithItsCause(): void {
		$cause = new \RuntimeException('SQLSTATE: password=hunter2 at db.internal');
		$response = $this->answers('alice')->forUser(fn (): array => throw $cause);
		self::assertSame(500, $response->getStatus());
		self::assertSame(['error' => 'internal_error', 'message' => ApiError::INTERNAL_MESSAGE], $response->getData());
		self::assertStringNotContainsString('hunter2', json_encode($response->getData()));
		self::assertSame([$cause], $this->logger->exceptions);
	}

	public function testAnApisOwnErrorClassNamesItsInternalError(): void {
		$response = $this->answers('alice')->forUser(fn (): array => throw new \TypeError('bad'), MailError::class);
		self::assertSame(['error' => 'internal_error', 'message' => MailError::INTERNAL_MESSAGE], $response->getData());
	}

	public function testAnAdminRouteAsksTheGroupManagerAgain(): void {
		$groups = new FakeGroupManager(['root']);
		$answers = new OcsAnswers(new FakeUserSession(new FakeUser('alice')), $groups, $this->logger);
		$ran = false;
		$response = $answers->forAdmin(function () use (&$ran): array {
			$ran = true;
			return [];
		});
		self::assertFalse($ran, 'a non-admin never reaches an admin route');
		self::assertSame(403, $response->getStatus());
		self::assertSame('forbidden', $response->getData()['error']);
		self::assertSame(['alice'], $groups->asked);

		$response = $this->answers('root', ['root'])->forAdmin(fn (string $uid): array => ['admin' => $uid]);
		self::assertSame(['admin' => 'root'], $response->getData());
	}
}
