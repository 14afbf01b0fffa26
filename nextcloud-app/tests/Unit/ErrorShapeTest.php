<?php

declare(strict_types=1);

namespace OCA\Tamebi\Tests\Unit;

use OCA\Tamebi\Service\ErrorShape;
use PHPUnit\Framework\TestCase;

/** Our table of the orchestrator's refusal codes against the list docs/api.md keeps. */
final class ErrorShapeTest extends TestCase {
	public function testEveryCodeWeKnowIsTheOrchestratorsWithItsStatus(): void {
		$api = (string)file_get_contents(__DIR__ . '/../../../docs/api.md');
		$codes = (new \ReflectionClassConstant(ErrorShape::class, 'CODES'))->getValue();
		self::assertNotEmpty($codes);
		foreach ($codes as $code => [$status]) {
			// A row of the Errors table: | <status> (...) | `<code>` | <message> |
			self::assertMatchesRegularExpression('/^\| ' . $status . '\b[^|\n]*\| `' . preg_quote($code, '/') . '` \|/m', $api,
				"docs/api.md has no $status row for $code");
			self::assertSame($code, ErrorShape::knownCode($status, $code));
			self::assertNull(ErrorShape::knownCode($status === 400 ? 409 : 400, $code));
		}
	}

	public function testOnlyAStringCodeInsideTheErrorObjectIsRead(): void {
		self::assertSame('too_fast', ErrorShape::codeOf('{"error":{"message":"x","requestId":"r","code":"too_fast"}}'));
		foreach (['', 'not json', '{"code":"too_fast"}', '{"error":"too_fast"}', '{"error":{"code":7}}', '{"error":{"code":["too_fast"]}}'] as $body) {
			self::assertNull(ErrorShape::codeOf($body), $body);
		}
		self::assertSame(['error' => ['message' => 'Not found.', 'requestId' => 'r']], ErrorShape::body(404, 'r', null));
	}
}
