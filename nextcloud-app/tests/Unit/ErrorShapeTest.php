<?php

declare(strict_types=1);

namespace OCA\Tamebi\Tests\Unit;

use OCA\Tamebi\Service\ErrorShape;
use PHPUnit\Framework\TestCase;

/** Our table of the orchestrator's refusal codes against the list docs/api.md keeps. */
final class ErrorShapeTest extends TestCase {
	public function testEveryCodeWeKnowIsTheOrchestratorsWithItsStatusAndText(): void {
		$documented = self::documentedCodes();
		self::assertArrayHasKey('too_fast', $documented, 'docs/api.md\'s Errors table was not found');
		$codes = (new \ReflectionClassConstant(ErrorShape::class, 'CODES'))->getValue();
		self::assertNotEmpty($codes);
		foreach ($codes as $code => [$status, $text]) {
			self::assertArrayHasKey($code, $documented, "docs/api.md has no row for $code");
			self::assertSame($documented[$code], [$status, $text], "our $code differs from docs/api.md's row");
			self::assertSame($code, ErrorShape::knownCode($status, $code));
			self::assertSame($text, ErrorShape::message($status, $code));
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
		self::assertSame(['error' => ['message' => 'Not found.', 'requestId' => 'r']], ErrorShape::body(404, 'r', null));
	}
}
