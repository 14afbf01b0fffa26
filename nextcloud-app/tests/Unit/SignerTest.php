<?php

declare(strict_types=1);

namespace OCA\Tamebi\Tests\Unit;

use OCA\Tamebi\Service\Signer;
use PHPUnit\Framework\TestCase;

/** G1: the PHP signer reproduces the shared vectors the Rust verifier is tested against. */
final class SignerTest extends TestCase {
	private static function vectors(): array {
		$file = dirname(__DIR__, 3) . '/testdata/g1-vectors.json';
		$data = json_decode((string)file_get_contents($file), true, 512, JSON_THROW_ON_ERROR);
		self::assertNotEmpty($data['vectors']);
		return $data;
	}

	public function testEveryVectorSignsByteForByte(): void {
		$data = self::vectors();
		$signer = new Signer($data['proxy_secret'], $data['signing_secret']);
		foreach ($data['vectors'] as $v) {
			self::assertSame($v['body_sha256'], hash('sha256', $v['body']), 'body hash of ' . $v['uid']);
			self::assertSame($v['signature'], $signer->signature($v['uid'], $v['ts'], $v['body']), 'signature of ' . $v['uid']);
		}
	}

	public function testHeadersCarryBearerUidTimeAndSignature(): void {
		$data = self::vectors();
		$v = $data['vectors'][0];
		$headers = (new Signer($data['proxy_secret'], $data['signing_secret']))->headers($v['uid'], $v['ts'], $v['body']);
		self::assertSame([
			'Authorization' => 'Bearer ' . $data['proxy_secret'],
			'X-Tamebi-Uid' => $v['uid'],
			'X-Tamebi-Ts' => (string)$v['ts'],
			'X-Tamebi-Signature' => $v['signature'],
		], $headers);
	}

	public function testAnyChangeBreaksTheSignature(): void {
		$data = self::vectors();
		$v = $data['vectors'][0];
		$signer = new Signer($data['proxy_secret'], $data['signing_secret']);
		self::assertNotSame($v['signature'], $signer->signature('bob', $v['ts'], $v['body']));
		self::assertNotSame($v['signature'], $signer->signature($v['uid'], $v['ts'] + 1, $v['body']));
		self::assertNotSame($v['signature'], $signer->signature($v['uid'], $v['ts'], $v['body'] . ' '));
		self::assertNotSame($v['signature'], (new Signer($data['proxy_secret'], 'other'))->signature($v['uid'], $v['ts'], $v['body']));
	}
}
