<?php

declare(strict_types=1);

namespace OCA\Tamebi\Tests\Unit;

use OCA\Tamebi\Command\SetupOptions;
use OCA\Tamebi\Service\AppSettings;
use OCA\Tamebi\Tests\Stubs\MemoryAppConfig;
use PHPUnit\Framework\TestCase;

/**
 * `occ tamebi:setup`'s URL options: what it stores for --orchestrator-url (one URL or several,
 * comma or space separated) and --mcp-url, and what it refuses with a message naming the
 * option and the value.
 */
final class SetupOptionsTest extends TestCase {
	/** @return array{orchestrators: list<string>, mcp: string} */
	private static function ok(string $orchestrator, string $mcp = 'https://mcp.example.test/mcp'): array {
		return SetupOptions::parse($orchestrator, $mcp);
	}

	private static function refused(string $orchestrator, string $mcp, string $option, string $value): void {
		try {
			SetupOptions::parse($orchestrator, $mcp);
		} catch (\InvalidArgumentException $e) {
			self::assertStringContainsString($option, $e->getMessage());
			self::assertStringContainsString("'$value'", $e->getMessage(), 'the message names the refused value');
			return;
		}
		self::fail("accepted --orchestrator-url '$orchestrator' --mcp-url '$mcp'");
	}

	public function testOneOrchestratorUrl(): void {
		self::assertSame(['http://tamebi:8700'], self::ok('http://tamebi:8700')['orchestrators']);
		self::assertSame(['https://tamebi.example.test'], self::ok('https://tamebi.example.test')['orchestrators']);
		self::assertSame(['http://[::1]:8700'], self::ok('http://[::1]:8700')['orchestrators']);
		self::assertSame(['http://10.0.0.5:8700'], self::ok(' http://10.0.0.5:8700 ')['orchestrators']);
		// Container names often have underscores (FILTER_VALIDATE_URL refused them).
		self::assertSame(['http://tamebi_orchestrator:8700'], self::ok('http://tamebi_orchestrator:8700')['orchestrators']);
	}

	public function testMalformedHostsAreRefused(): void {
		foreach (['http://:8700', 'http://-tamebi:8700', 'http://tamebi..example:8700', 'http://tam ebi:8700', 'http:/tamebi:8700', 'http://[zz]:8700', "http://tamebi\x00:8700"] as $url) {
			try {
				SetupOptions::parse($url, 'https://mcp.example.test/mcp');
			} catch (\InvalidArgumentException) {
				$this->addToAssertionCount(1);
				continue;
			}
			self::fail("accepted the orchestrator URL '$url'");
		}
	}

	public function testTrailingSlashesAreDroppedFromOrchestratorUrlsNotFromTheirPath(): void {
		self::assertSame(['http://tamebi:8700'], self::ok('http://tamebi:8700/')['orchestrators']);
		self::assertSame(['http://tamebi:8700'], self::ok('http://tamebi:8700///')['orchestrators']);
		self::assertSame(['https://proxy.example.test/tamebi'], self::ok('https://proxy.example.test/tamebi/')['orchestrators']);
	}

	public function testSeveralOrchestratorUrlsCommaOrSpaceSeparatedWithoutDuplicates(): void {
		$want = ['http://tamebi-a:8700', 'http://tamebi-b:8700', 'http://tamebi-c:8700'];
		self::assertSame($want, self::ok('http://tamebi-a:8700,http://tamebi-b:8700,http://tamebi-c:8700')['orchestrators']);
		self::assertSame($want, self::ok("http://tamebi-a:8700, http://tamebi-b:8700/ \n http://tamebi-c:8700 ,")['orchestrators']);
		self::assertSame($want, self::ok('http://tamebi-a:8700 http://tamebi-b:8700 http://tamebi-c:8700 http://tamebi-a:8700/')['orchestrators']);
	}

	public function testSchemeAndHostAreCaseInsensitiveSoOneInstanceIsListedOnce(): void {
		// Two spellings of one instance would be routed to as two (each with its own weight).
		self::assertSame(['http://tamebi-a:8700/Base'], self::ok('HTTP://Tamebi-A:8700/Base, http://tamebi-a:8700/Base/')['orchestrators']);
	}

	public function testWhatIsStoredIsWhatTheAppReadsBack(): void {
		$settings = new AppSettings(new MemoryAppConfig());
		$parsed = self::ok("HTTP://tamebi-a:8700/, http://tamebi-b:8700\nhttp://tamebi-a:8700");
		$settings->set(AppSettings::ORCHESTRATOR_URL, SetupOptions::stored($parsed['orchestrators']));
		self::assertSame(['http://tamebi-a:8700', 'http://tamebi-b:8700'], $settings->orchestratorUrls());
	}

	public function testBadSchemesAreRefused(): void {
		foreach (['ftp://tamebi:8700', 'file:///etc/passwd', 'javascript://tamebi', 'ws://tamebi:8700', 'tamebi:8700', '//tamebi:8700', 'http:/tamebi'] as $url) {
			self::refused($url, 'https://mcp.example.test/mcp', '--orchestrator-url', $url);
			self::refused('http://tamebi:8700', $url, '--mcp-url', $url);
		}
	}

	public function testOneBadUrlInAListRefusesTheList(): void {
		self::refused('http://tamebi-a:8700, ftp://tamebi-b:8700', 'https://mcp.example.test/mcp', '--orchestrator-url', 'ftp://tamebi-b:8700');
		// A space inside what was meant as one URL splits it; the stray part is named.
		self::refused('http://tamebi a:8700', 'https://mcp.example.test/mcp', '--orchestrator-url', 'a:8700');
	}

	public function testEmptyOptionsAreRefused(): void {
		self::refused('', 'https://mcp.example.test/mcp', '--orchestrator-url', '');
		self::refused(' , ', 'https://mcp.example.test/mcp', '--orchestrator-url', '');
		self::refused('http://tamebi:8700', '', '--mcp-url', '');
	}

	public function testCredentialsFragmentsAndQueriesAreRefused(): void {
		foreach (['http://admin:secret@tamebi:8700', 'http://tamebi:8700#x', 'http://tamebi:8700/?x=1', 'http://tamebi:8700?', 'http://tamebi:8700/?'] as $url) {
			self::refused($url, 'https://mcp.example.test/mcp', '--orchestrator-url', $url);
		}
		foreach (['https://user@mcp.example.test/mcp', 'https://mcp.example.test/mcp#a', 'https://mcp.example.test/mcp?aud=x'] as $url) {
			self::refused('http://tamebi:8700', $url, '--mcp-url', $url);
		}
	}

	public function testPortsOutOfRangeAreRefused(): void {
		foreach (['http://tamebi:0', 'http://tamebi:65536', 'http://tamebi:99999'] as $url) {
			self::refused($url, 'https://mcp.example.test/mcp', '--orchestrator-url', $url);
		}
		self::assertSame(['http://tamebi:65535'], self::ok('http://tamebi:65535')['orchestrators']);
	}

	public function testTheMcpUrlIsOneUrlKeptExactlyAsItIsTheTokensAudience(): void {
		// The aud of the tokens must equal the MCP server's own URL: a trailing slash is kept.
		self::assertSame('https://mcp.example.test/mcp/', self::ok('http://tamebi:8700', 'https://mcp.example.test/mcp/')['mcp']);
		self::assertSame('https://mcp.example.test/mcp', self::ok('http://tamebi:8700', "  https://mcp.example.test/mcp\n")['mcp']);
		self::refused('http://tamebi:8700', 'https://a.example.test/mcp,https://b.example.test/mcp', '--mcp-url', 'https://a.example.test/mcp,https://b.example.test/mcp');
		self::refused('http://tamebi:8700', 'https://a.example.test/mcp https://b.example.test/mcp', '--mcp-url', 'https://a.example.test/mcp https://b.example.test/mcp');
	}
}
