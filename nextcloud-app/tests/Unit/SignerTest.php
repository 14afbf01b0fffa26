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
		self::assertGreaterThanOrEqual(10, count($data['vectors']));
		return $data;
	}

	/** The URL a vector's request went to, on some orchestrator. */
	private static function url(array $v, string $base = 'http://orchestrator:8700'): string {
		return $base . $v['path'] . ($v['query'] === '' ? '' : '?' . $v['query']);
	}

	public function testEveryVectorSignsByteForByte(): void {
		$data = self::vectors();
		$signer = new Signer($data['proxy_secret'], $data['signing_secret']);
		foreach ($data['vectors'] as $v) {
			self::assertSame($v['body_sha256'], hash('sha256', $v['body']), 'body hash of ' . $v['uid']);
			self::assertSame($v['credentials_sha256'], hash('sha256', $v['credentials']), 'credentials hash of ' . $v['uid']);
			self::assertSame($v['signature'],
				$signer->signature($v['method'], $v['path'], $v['query'], $v['uid'], $v['ts'], $v['nonce'], $v['body'], $v['credentials']),
				$v['signed_string']);
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
			self::assertSame($expected, $signer->headers($v['method'], self::url($v), $v['uid'], $v['ts'], $v['body'], $v['credentials'], $v['nonce']));
		}
		$a = $signer->headers('GET', 'http://o/v1/conversations', 'alice', 1, '');
		$b = $signer->headers('GET', 'http://o/v1/conversations', 'alice', 1, '');
		self::assertNotSame($a['X-Tamebi-Nonce'], $b['X-Tamebi-Nonce'], 'every request gets a fresh nonce');
	}

	/** Issue #27: the URL is signed as sent: its path (with a base path) and raw query, never its host. */
	public function testTheTargetIsThePathAndRawQueryAsSent(): void {
		self::assertSame(['/v1/conversations', ''], Signer::target('http://tamebi:8700/v1/conversations'));
		self::assertSame(['/base/v1/chat', ''], Signer::target('https://proxy.example/base/v1/chat'));
		self::assertSame(['/v1/apps/resource', 'server=a&uri=ui%3A%2F%2Fa%2Fx&conversation=c1'],
			Signer::target('http://t/v1/apps/resource?server=a&uri=ui%3A%2F%2Fa%2Fx&conversation=c1'));
		self::assertSame(['/v1/conversations/%FF%FE', ''], Signer::target('http://t/v1/conversations/%FF%FE'));
		self::assertSame(['/', ''], Signer::target('http://t'));
		$data = self::vectors();
		$signer = new Signer($data['proxy_secret'], $data['signing_secret']);
		$v = $data['vectors'][0];
		$here = $signer->headers($v['method'], self::url($v), $v['uid'], $v['ts'], $v['body'], $v['credentials'], $v['nonce']);
		$there = $signer->headers($v['method'], self::url($v, 'https://other-instance:9000'), $v['uid'], $v['ts'], $v['body'], $v['credentials'], $v['nonce']);
		self::assertSame($here, $there, 'another instance at the same path: the same signature');
		$prefixed = $signer->headers($v['method'], self::url($v, 'https://proxy/tamebi'), $v['uid'], $v['ts'], $v['body'], $v['credentials'], $v['nonce']);
		self::assertNotSame($here['X-Tamebi-Signature'], $prefixed['X-Tamebi-Signature'], 'a base path is part of what is signed');
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
		$sign = fn (array $o = []): string => $signer->signature(...array_values(array_merge([
			'method' => $v['method'], 'path' => $v['path'], 'query' => $v['query'], 'uid' => $v['uid'], 'ts' => $v['ts'],
			'nonce' => $v['nonce'], 'body' => $v['body'], 'credentials' => $v['credentials']], $o)));
		self::assertSame($v['signature'], $sign());
		foreach ([['method' => 'DELETE'], ['path' => '/v1/me/data'], ['path' => '/v1/conversations/c1'], ['query' => 'a=1'],
			['uid' => 'bob'], ['ts' => $v['ts'] + 1], ['nonce' => $v['nonce'] . 'x'], ['body' => $v['body'] . ' '],
			['credentials' => $v['credentials'] . 'x']] as $change) {
			self::assertNotSame($v['signature'], $sign($change), json_encode($change));
		}
		self::assertNotSame($v['signature'], (new Signer($data['proxy_secret'], 'other'))
			->signature($v['method'], $v['path'], $v['query'], $v['uid'], $v['ts'], $v['nonce'], $v['body'], $v['credentials']));
	}

	/** No signer produces the earlier form: its vector is not what the signer makes for that request. */
	public function testTheEarlierFormIsNeverProduced(): void {
		$data = self::vectors();
		$signer = new Signer($data['proxy_secret'], $data['signing_secret']);
		foreach ($data['outdated'] as $v) {
			$h = $signer->headers($v['method'], self::url($v), $v['uid'], $v['ts'], $v['body'], $v['credentials'], $v['nonce']);
			self::assertNotSame($v['signature'], $h['X-Tamebi-Signature']);
		}
		self::assertSame('tamebi-admin-v2', Signer::ADMIN_PURPOSE);
	}
}
