<?php

declare(strict_types=1);

namespace OCA\Tamebi\Tests\Unit;

use OCA\Tamebi\Service\AppSettings;
use OCA\Tamebi\Service\OidcFlow;
use OCA\Tamebi\Service\TokenService;
use OCA\Tamebi\Tests\Stubs\FakeConfig;
use OCA\Tamebi\Tests\Stubs\FakeRequest;

/** Token renewal against a fake oidc app: refresh with rotation, silent re-authorization, total failure. */
final class TokenServiceTest extends AppTestCase {
	private function oidcRequests(string $endpoint): array {
		return array_values(array_filter($this->upstream->requests(), fn ($r) => str_contains($r['uri'], "/apps/oidc/$endpoint")));
	}

	public function testFreshTokenIsUsedWithoutAnyRequest(): void {
		$this->giveToken('access-live', 600);
		self::assertSame('access-live', $this->tokens->accessToken());
		self::assertSame([], $this->upstream->requests());
	}

	public function testExpiringTokenIsRefreshedAndTheRotatedRefreshTokenKept(): void {
		$this->giveToken('access-old', 30); // inside the 60 s margin
		self::assertSame('access-1', $this->tokens->accessToken());
		self::assertSame('refresh-1', $this->session->data[TokenService::SESSION_KEY]['nextcloud']['r']);
		self::assertSame($this->clock->getTime() + 900, $this->session->data[TokenService::SESSION_KEY]['nextcloud']['e']);

		// Fifteen minutes later: the rotated token works; the spent one would not.
		$this->clock->now = $this->clock->getTime() + 900;
		self::assertSame('access-2', $this->tokens->accessToken());
		self::assertSame('refresh-2', $this->session->data[TokenService::SESSION_KEY]['nextcloud']['r']);
		self::assertCount(2, $this->oidcRequests('token'));
		self::assertSame([], $this->oidcRequests('authorize'));
	}

	public function testFailedRefreshFallsBackToSilentReauthorizationWithOnlyNextcloudCookies(): void {
		$this->session->data[TokenService::SESSION_KEY] = ['nextcloud' => ['a' => 'access-old', 'r' => 'refresh-spent', 'e' => $this->clock->getTime() - 1]];
		self::assertSame('access-1', $this->tokens->accessToken());

		$authorize = $this->oidcRequests('authorize');
		self::assertCount(1, $authorize);
		self::assertSame('ocabc=live-session; oc_sessionPassphrase=pp; __Host-nc_sameSiteCookiestrict=true', $authorize[0]['headers']['cookie']);
		parse_str((string)parse_url($authorize[0]['uri'], PHP_URL_QUERY), $query);
		self::assertSame('S256', $query['code_challenge_method']);
		self::assertSame('client-1', $query['client_id']);
		self::assertStringContainsString('offline_access', $query['scope']);
		// The session lock was released for the loopback call and taken back afterwards.
		self::assertSame(['close', 'reopen'], $this->session->events);
		self::assertSame('refresh-1', $this->session->data[TokenService::SESSION_KEY]['nextcloud']['r']);
	}

	public function testTotalFailureMeansNoTokenAndNoRetryStorm(): void {
		$request = new FakeRequest('req-1', ['Cookie' => 'ocabc=expired-session; oc_sessionPassphrase=pp']);
		$tokens = new TokenService($this->session, $request, new FakeConfig(['instanceid' => 'ocabc']), $this->flow, $this->clock, $this->logger, $this->settings);
		$this->session->data[TokenService::SESSION_KEY] = ['nextcloud' => ['a' => 'access-old', 'r' => 'refresh-spent', 'e' => $this->clock->getTime() - 1]];

		self::assertNull($tokens->accessToken());
		self::assertArrayNotHasKey('nextcloud', $this->session->data[TokenService::SESSION_KEY]);
		$seen = count($this->upstream->requests());
		self::assertSame(2, $seen); // one refresh, one authorize

		self::assertNull($tokens->accessToken());
		self::assertCount($seen, $this->upstream->requests(), 'no new attempt within the retry delay');

		$this->clock->now = $this->clock->getTime() + TokenService::RETRY_AFTER_S;
		self::assertNull($tokens->accessToken());
		self::assertGreaterThan($seen, count($this->upstream->requests()));
		// Tokens never reach the log.
		self::assertStringNotContainsString('refresh-spent', $this->logger->text());
	}

	/** Issue 10.1: one token per MCP server audience, each asked for with its own `resource`. */
	public function testEachAudienceGetsItsOwnToken(): void {
		$this->settings->set(AppSettings::MCP_AUDIENCES, json_encode(['mail' => 'https://mail-mcp.example.test/mcp', 'bad name' => 'https://x/', 'x' => 'ftp://no']));
		$this->giveToken('access-nc', 600, 'nextcloud');
		$tokens = $this->tokens->accessTokens();
		self::assertSame(['nextcloud', 'mail'], array_keys($tokens));
		self::assertSame('access-nc', $tokens['nextcloud']);
		self::assertNotSame($tokens['nextcloud'], $tokens['mail']);
		$authorize = $this->oidcRequests('authorize');
		self::assertCount(1, $authorize);
		parse_str((string)parse_url($authorize[0]['uri'], PHP_URL_QUERY), $query);
		self::assertSame('https://mail-mcp.example.test/mcp', $query['resource']);
		$exchange = $this->oidcRequests('token');
		parse_str($exchange[0]['body'], $form);
		self::assertSame('https://mail-mcp.example.test/mcp', $form['resource']);
		// Renewal of one audience's token asks for that audience again.
		$this->clock->now = $this->clock->getTime() + 900;
		$this->tokens->accessTokens();
		$refreshes = array_values(array_filter($this->oidcRequests('token'), fn ($r) => str_contains($r['body'], 'grant_type=refresh_token')));
		$resources = array_map(function ($r) {
			parse_str($r['body'], $form);
			return $form['resource'] ?? null;
		}, $refreshes);
		sort($resources);
		self::assertSame(['https://mail-mcp.example.test/mcp', 'https://mcp.example.test/mcp'], $resources);
	}

	public function testStateMismatchYieldsNoCode(): void {
		self::assertNull(OidcFlow::codeFromLocation('https://nc/cb?code=abc&state=theirs', 'ours'));
		self::assertSame('abc', OidcFlow::codeFromLocation('https://nc/cb?code=abc&state=ours', 'ours'));
		self::assertNull(OidcFlow::codeFromLocation('https://nc/login', 'ours'));
	}

	public function testCookieFilterKeepsOnlyNextcloudSessionCookies(): void {
		self::assertSame('nc_token=1; oc123=s; nc_session_id=2; __Host-nc_sameSiteCookielax=true; mysession=3',
			OidcFlow::sessionCookies('nc_token=1; _ga=x; oc123=s; other=y; nc_session_id=2; __Host-nc_sameSiteCookielax=true; =bad; mysession=3', 'mysession'));
	}
}
