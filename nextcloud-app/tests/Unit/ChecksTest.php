<?php

declare(strict_types=1);

namespace OCA\Tamebi\Tests\Unit;

use OCA\Tamebi\Service\AppSettings;
use OCA\Tamebi\Service\Checks;
use OCA\Tamebi\Tests\Standin;
use OCA\Tamebi\Tests\Stubs\CurlClientService;
use OCA\Tamebi\Tests\Stubs\FakeAppManager;
use OCA\Tamebi\Tests\Stubs\FakeConfig;

/**
 * The bearer check of `occ tamebi:verify`: the configuration read follows what user_oidc reads
 * (system config, === true; providers with checkBearer), and with a real token the answer of a
 * real WebDAV server (the stand-in, with its JWT bearer switch on and off) decides.
 */
final class ChecksTest extends AppTestCase {
	private const MCP = 'https://mcp.example.test/mcp';

	private function checks(array $system = [], array $apps = ['user_oidc', 'oidc']): Checks {
		return new Checks($this->settings, $this->orchestrator, new CurlClientService(), new FakeAppManager($apps),
			$this->appConfig, new FakeConfig($system), $this->flow);
	}

	public function testSystemConfigBooleanTrueIsWhatUserOidcReads(): void {
		$r = $this->checks(['user_oidc' => ['oidc_provider_bearer_validation' => true]])->bearerValidation();
		self::assertTrue($r['ok'], $r['detail']);
		self::assertSame(Checks::BEARER_CHECK, $r['name']);
	}

	public function testStringValuesFailBecauseUserOidcComparesWithTripleEquals(): void {
		// `occ config:system:set user_oidc oidc_provider_bearer_validation --value=1` without --type stores a string.
		foreach (['1', 'true', 1] as $value) {
			$r = $this->checks(['user_oidc' => ['oidc_provider_bearer_validation' => $value]])->bearerValidation();
			self::assertFalse($r['ok'], var_export($value, true));
			self::assertStringContainsString('--type=boolean', $r['detail']);
		}
	}

	public function testTheOldAppConfigKeyIsNamedAsUnread(): void {
		$this->appConfig->setValueString('user_oidc', 'oidc_provider_bearer_validation', '1');
		$r = $this->checks()->bearerValidation();
		self::assertFalse($r['ok']);
		self::assertStringContainsString('never reads it', $r['detail']);
		self::assertStringContainsString(Checks::BEARER_FIX, $r['detail']);
	}

	public function testAProviderWithBearerCheckingIsTheOtherPath(): void {
		$this->appConfig->setValueString('user_oidc', 'provider-3-checkBearer', '1');
		$this->appConfig->setValueString('user_oidc', 'provider-4-checkBearer', '0');
		$r = $this->checks()->bearerValidation();
		self::assertTrue($r['ok'], $r['detail']);
		self::assertStringContainsString('#3', $r['detail']);
		self::assertStringNotContainsString('#4', $r['detail']);
		// ...unless user_oidc has no validator left for it.
		$r = $this->checks(['user_oidc' => ['selfencoded_bearer_validation' => false]])->bearerValidation();
		self::assertFalse($r['ok']);
	}

	public function testWithoutUserOidcItFails(): void {
		$r = $this->checks(['user_oidc' => ['oidc_provider_bearer_validation' => true]], ['oidc'])->bearerValidation();
		self::assertFalse($r['ok']);
		self::assertStringContainsString('app:install user_oidc', $r['detail']);
	}

	public function testARealTokenAcceptedByWebdavDecidesEvenWhenTheConfigReadDoubts(): void {
		// The reported case: tokens work, but the configuration looks unfamiliar.
		$nc = new Standin(jwtBearer: true);
		$this->settings->set(AppSettings::INTERNAL_URL, $nc->url);
		$checks = $this->checks();
		$instance = [Checks::pass('orchestrator reachable (GET /healthz)', 'x'), $checks->bearerValidation()];
		self::assertFalse($instance[1]['ok']);

		$proof = $checks->userToken('alice', $nc->mintJwt('alice', self::MCP));
		$results = Checks::decidedBy($instance, $proof);
		$nc->stop();

		$byName = array_column($results, null, 'name');
		self::assertCount(1, array_filter($results, fn ($r) => $r['name'] === Checks::BEARER_CHECK));
		self::assertTrue($byName[Checks::BEARER_CHECK]['ok'], $byName[Checks::BEARER_CHECK]['detail']);
		self::assertStringContainsString('proven: WebDAV answered 207', $byName[Checks::BEARER_CHECK]['detail']);
		self::assertTrue($byName['tampered token is refused']['ok'], $byName['tampered token is refused']['detail']);
		self::assertTrue($byName['token aud = MCP URL and sub = uid']['ok'], $byName['token aud = MCP URL and sub = uid']['detail']);
		self::assertSame([], array_filter($results, fn ($r) => !$r['ok']));
	}

	public function testATokenRefusedByWebdavFailsEvenWhenTheConfigLooksRight(): void {
		// A fresh Nextcloud: the oidc app issues the token, nothing accepts it as Bearer.
		$nc = new Standin(jwtBearer: false);
		$this->settings->set(AppSettings::INTERNAL_URL, $nc->url);
		$checks = $this->checks(['user_oidc' => ['oidc_provider_bearer_validation' => true]]);
		$token = $nc->mintJwt('alice', self::MCP);
		$results = Checks::decidedBy([$checks->bearerValidation()], $checks->userToken('alice', $token));
		$nc->stop();

		$bearer = array_column($results, null, 'name')[Checks::BEARER_CHECK];
		self::assertFalse($bearer['ok']);
		self::assertStringContainsString('WebDAV answered 401', $bearer['detail']);
		self::assertStringNotContainsString($token, implode("\n", array_column($results, 'detail')), 'a token never reaches the output');
	}

	public function testAWrongAudienceIsReported(): void {
		$nc = new Standin(jwtBearer: true);
		$this->settings->set(AppSettings::INTERNAL_URL, $nc->url);
		$results = $this->checks()->userToken('bob', $nc->mintJwt('bob', 'https://other.example/mcp'));
		$nc->stop();
		$claims = array_column($results, null, 'name')['token aud = MCP URL and sub = uid'];
		self::assertFalse($claims['ok']);
		self::assertStringContainsString('https://other.example/mcp', $claims['detail']);
	}
}
