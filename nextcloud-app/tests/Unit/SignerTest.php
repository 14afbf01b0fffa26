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
			self::assertSame($v['credentials_sha256'], hash('sha256', $v['credentials']), 'credentials hash of ' . $v['uid']);
			self::assertSame($v['signature'], $signer->signature($v['uid'], $v['ts'], $v['nonce'], $v['body'], $v['credentials']),
				'signature of ' . $v['uid']);
		}
	}

	public function testHeadersCarryBearerUidTimeNonceCredentialsAndSignature(): void {
		$data = self::vectors();
		$signer = new Signer($data['proxy_secret'], $data['signing_secret']);
		foreach ($data['vectors'] as $v) {
			$expected = [
				'Authorization' => 'Bearer ' . $data['proxy_secret'],
				'X-Tamebi-Uid' => $v['uid'],
				'X-Tamebi-Ts' => (string)$v['ts'],
				'X-Tamebi-Nonce' => $v['nonce'],
				'X-Tamebi-Signature' => $v['signature'],
			];
			if ($v['credentials'] !== '') {
				$expected['X-Tamebi-Credentials'] = $v['credentials'];
			}
			self::assertSame($expected, $signer->headers($v['uid'], $v['ts'], $v['body'], $v['credentials'], $v['nonce']));
		}
		$a = $signer->headers('alice', 1, '');
		$b = $signer->headers('alice', 1, '');
		self::assertNotSame($a['X-Tamebi-Nonce'], $b['X-Tamebi-Nonce'], 'every request gets a fresh nonce');
	}

	public function testCredentialsHeaderKeepsEachTokenUnderItsServerName(): void {
		self::assertSame('nextcloud=eyJ.a-b_c.d~+/==, mail=t2', Signer::credentialsHeader(['nextcloud' => 'eyJ.a-b_c.d~+/==', 'mail' => 't2']));
		// Anything that would not parse back unambiguously is left out, never mangled.
		self::assertSame('ok=t', Signer::credentialsHeader(['ok' => 't', 'bad name' => 't', 'x' => 'has space', 'y' => 'a,b', 'z' => '']));
		self::assertSame('', Signer::credentialsHeader([]));
	}

	public function testAnyChangeBreaksTheSignature(): void {
		$data = self::vectors();
		$v = $data['vectors'][0];
		$signer = new Signer($data['proxy_secret'], $data['signing_secret']);
		[$uid, $ts, $nonce, $body, $cred] = [$v['uid'], $v['ts'], $v['nonce'], $v['body'], $v['credentials']];
		self::assertSame($v['signature'], $signer->signature($uid, $ts, $nonce, $body, $cred));
		self::assertNotSame($v['signature'], $signer->signature('bob', $ts, $nonce, $body, $cred));
		self::assertNotSame($v['signature'], $signer->signature($uid, $ts + 1, $nonce, $body, $cred));
		self::assertNotSame($v['signature'], $signer->signature($uid, $ts, $nonce . 'x', $body, $cred));
		self::assertNotSame($v['signature'], $signer->signature($uid, $ts, $nonce, $body . ' ', $cred));
		self::assertNotSame($v['signature'], $signer->signature($uid, $ts, $nonce, $body, $cred . 'x'));
		self::assertNotSame($v['signature'], (new Signer($data['proxy_secret'], 'other'))->signature($uid, $ts, $nonce, $body, $cred));
	}
}
