<?php

declare(strict_types=1);

namespace OCA\Tamebi\Command;

use OCA\Tamebi\Exception\ProxyError;
use OCA\Tamebi\Service\AppSettings;
use OCA\Tamebi\Service\Checks;
use OCA\Tamebi\Service\OidcClients;
use OCA\Tamebi\Service\OidcFlow;
use OCP\Http\Client\IClientService;
use OCP\IUserManager;
use Symfony\Component\Console\Command\Command;
use Symfony\Component\Console\Helper\QuestionHelper;
use Symfony\Component\Console\Input\InputInterface;
use Symfony\Component\Console\Input\InputOption;
use Symfony\Component\Console\Output\OutputInterface;
use Symfony\Component\Console\Question\Question;

/**
 * `occ tamebi:verify [--user UID]` — the proof that the central invariant holds on this instance.
 * With --user it also obtains a fresh token for that user (authorization code + PKCE, logging in
 * with the user's password or app password, asked for and never stored) and shows that it works
 * as Bearer on WebDAV, is refused when tampered with, and carries aud = MCP URL and sub = uid.
 * Prints PASS/FAIL per check; exits non-zero on any failure. Changes nothing.
 */
class Verify extends Command {
	public function __construct(
		private Checks $checks,
		private AppSettings $settings,
		private OidcFlow $flow,
		private IClientService $clientService,
		private IUserManager $userManager,
	) {
		parent::__construct();
	}

	protected function configure(): void {
		$this->setName('tamebi:verify')
			->setDescription('Prove that Tamebi reaches Nextcloud only with the user\'s own token')
			->addOption('user', null, InputOption::VALUE_REQUIRED, 'Also obtain and test a token for this user')
			->addOption('password-stdin', null, InputOption::VALUE_NONE, 'Read that user\'s (app) password from standard input');
	}

	protected function execute(InputInterface $input, OutputInterface $output): int {
		$uid = $input->getOption('user');
		$application = $this->getApplication();
		$results = $this->checks->instance(is_string($uid) ? $uid : null,
			$application === null ? null : new OidcClients($application));
		if (is_string($uid) && $uid !== '') {
			$results = array_merge($results, $this->userChecks($uid, $this->password($input, $output, $uid)));
		}
		$failed = 0;
		foreach ($results as $r) {
			$failed += $r['ok'] ? 0 : 1;
			$output->writeln(sprintf('%s  %s — %s', $r['ok'] ? 'PASS' : 'FAIL', $r['name'], $r['detail']));
		}
		$output->writeln($failed === 0 ? 'All checks passed.' : "$failed check(s) failed.");
		return $failed === 0 ? 0 : 1;
	}

	private function password(InputInterface $input, OutputInterface $output, string $uid): string {
		if ($input->getOption('password-stdin')) {
			return rtrim((string)fgets(STDIN), "\r\n");
		}
		$question = (new Question("Password or app password of $uid (not stored): "))->setHidden(true);
		$helper = new QuestionHelper();
		return (string)$helper->ask($input, $output, $question);
	}

	/** @return list<array{name: string, ok: bool, detail: string}> */
	private function userChecks(string $uid, string $password): array {
		$name = "fresh token for $uid";
		if ($this->userManager->get($uid) === null) {
			return [Checks::fail($name, 'no such user')];
		}
		try {
			$pkce = OidcFlow::newPkce();
			$code = $this->flow->silentCode(['Authorization' => 'Basic ' . base64_encode("$uid:$password")], $pkce);
			if ($code === null) {
				return [Checks::fail($name, 'no code from /authorize: wrong password, or the user has not yet connected Tamebi once in the browser (consent)')];
			}
			$token = $this->flow->exchangeCode($code, $pkce['verifier'])->accessToken;
		} catch (ProxyError $e) {
			return [Checks::fail($name, $e->getMessage())];
		}
		return [
			Checks::pass($name, 'authorization code + PKCE'),
			$this->webdav("token works as Bearer on WebDAV", $uid, $token, 207),
			$this->webdav("tampered token is refused", $uid, self::tamper($token), 401),
			$this->claims($uid, $token),
		];
	}

	private function webdav(string $name, string $uid, string $token, int $expected): array {
		$url = $this->flow->baseUrl() . 'remote.php/dav/files/' . rawurlencode($uid) . '/';
		try {
			$response = $this->clientService->newClient()->request('PROPFIND', $url, [
				'headers' => ['Authorization' => 'Bearer ' . $token, 'Depth' => '0'],
				'http_errors' => false, 'timeout' => 15, 'nextcloud' => ['allow_local_address' => true]]);
			$status = $response->getStatusCode();
		} catch (\Exception $e) {
			return Checks::fail($name, $e->getMessage());
		}
		return $status === $expected ? Checks::pass($name, "PROPFIND answered $status") : Checks::fail($name, "PROPFIND answered $status, expected $expected");
	}

	private function claims(string $uid, string $token): array {
		$name = 'token aud = MCP URL and sub = uid';
		$parts = explode('.', $token);
		$payload = count($parts) === 3 ? json_decode((string)base64_decode(strtr($parts[1], '-_', '+/'), true), true) : null;
		if (!is_array($payload)) {
			return Checks::fail($name, 'not a JWT: the client must use --token_type=jwt');
		}
		$aud = (array)($payload['aud'] ?? []);
		$mcp = $this->settings->mcpUrl();
		if (!in_array($mcp, $aud, true)) {
			return Checks::fail($name, 'aud is ' . implode(', ', $aud) . ", expected $mcp");
		}
		return ($payload['sub'] ?? null) === $uid ? Checks::pass($name, "aud $mcp, sub $uid") : Checks::fail($name, 'sub is not the uid');
	}

	/** Flips one character of the signature, keeping the token well-formed. */
	private static function tamper(string $token): string {
		$last = substr($token, -2, 1);
		return substr($token, 0, -2) . ($last === 'A' ? 'B' : 'A') . substr($token, -1);
	}
}
