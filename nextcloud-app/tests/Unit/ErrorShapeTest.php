<?php

declare(strict_types=1);

namespace OCA\Tamebi\Tests\Unit;

use OCA\Tamebi\Service\ErrorShape;
use OCA\Tamebi\Tests\Stubs\FakeL10N;
use PHPUnit\Framework\TestCase;

/** Our table of the orchestrator's refusal codes against the list docs/api.md keeps. */
final class ErrorShapeTest extends TestCase {
	public function testEveryCodeWeKnowIsTheOrchestratorsWithItsStatusAndText(): void {
		$documented = self::documentedCodes();
		self::assertArrayHasKey('too_fast', $documented, 'docs/api.md\'s Errors table was not found');
		$codes = (new \ReflectionClassConstant(ErrorShape::class, 'CODES'))->getValue();
		self::assertNotEmpty($codes);
		$english = new FakeL10N('en');
		foreach ($codes as $code => $status) {
			$text = ErrorShape::message($english, $status, $code);
			self::assertArrayHasKey($code, $documented, "docs/api.md has no row for $code");
			self::assertSame($documented[$code], [$status, $text], "our $code differs from docs/api.md's row");
			self::assertSame($code, ErrorShape::knownCode($status, $code));
			self::assertNull(ErrorShape::knownCode($status === 400 ? 409 : 400, $code));
		}
	}

	/**
	 * docs/api.md's Errors table, the one source of the orchestrator's refusal codes: each row
	 * `| <status> (...) | `<code>` | `<message>` ... |` as code => [status, message].
	 *
	 * @return array<string, array{int, string}>
	 */
	private static function documentedCodes(): array {
		$api = (string)file_get_contents(__DIR__ . '/../../../docs/api.md');
		preg_match_all('/^\| ([0-9]{3})\b[^|\n]*\| `([a-z_]+)` \| `([^`\n]+)`/m', $api, $rows, PREG_SET_ORDER);
		$codes = [];
		foreach ($rows as [, $status, $code, $text]) {
			$codes[$code] = [(int)$status, $text];
		}
		return $codes;
	}

	public function testOnlyAStringCodeInsideTheErrorObjectIsRead(): void {
		self::assertSame('too_fast', ErrorShape::codeOf('{"error":{"message":"x","requestId":"r","code":"too_fast"}}'));
		foreach (['', 'not json', '{"code":"too_fast"}', '{"error":"too_fast"}', '{"error":{"code":7}}', '{"error":{"code":["too_fast"]}}'] as $body) {
			self::assertNull(ErrorShape::codeOf($body), $body);
		}
		self::assertSame(['error' => ['message' => 'Not found.', 'requestId' => 'r']], ErrorShape::body(new FakeL10N(), 404, 'r', null));
	}

	/** Issue #34: the person reads our texts in their Nextcloud language; the code stays the same. */
	public function testTheTextsAreInThePersonsLanguage(): void {
		$german = new FakeL10N('de');
		self::assertSame('Nicht gefunden.', ErrorShape::message($german, 404));
		self::assertSame('Etwas ist schiefgelaufen. Bitte versuche es erneut.', ErrorShape::message($german, 500));
		self::assertSame(['error' => [
			'message' => 'Du sendest Nachrichten schneller als erlaubt. Warte einen Moment und sende dann erneut.',
			'requestId' => 'r', 'code' => 'too_fast', 'retryAfter' => 3,
		]], ErrorShape::body($german, 429, 'r', 'too_fast', 3));
		// The suffix the island recognises stays as it is.
		self::assertSame('Ein benötigter Dienst war nicht erreichbar oder gab keine brauchbare Antwort. Es ist nicht bekannt, ob etwas ausgeführt wurde: prüfe das, bevor du es erneut versuchst. (request id: r)',
			ErrorShape::streamErrorText($german, 502, 'r'));
		// Every text of every status and code has its German entry.
		$english = new FakeL10N('en');
		$codes = (new \ReflectionClassConstant(ErrorShape::class, 'CODES'))->getValue();
		foreach ([400, 401, 403, 404, 409, 413, 429, 500, 502, 504] as $status) {
			self::assertNotSame(ErrorShape::message($english, $status), ErrorShape::message($german, $status), "status $status");
		}
		foreach ($codes as $code => $status) {
			self::assertNotSame(ErrorShape::message($english, $status, $code), ErrorShape::message($german, $status, $code), $code);
		}
	}
}
