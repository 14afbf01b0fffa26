<?php

declare(strict_types=1);

namespace OCA\Tamebi\Command;

use OCA\Tamebi\Exception\ProxyError;
use OCA\Tamebi\Service\Checks;
use OCA\Tamebi\Service\OidcClients;
use OCA\Tamebi\Service\OidcFlow;
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
 * as Bearer on WebDAV (which then decides the user_oidc check instead of the configuration read),
 * is refused when tampered with, and carries aud = MCP URL and sub = uid.
 * Prints PASS/FAIL per check; exits non-zero on any failure. Changes nothing.
 */
class Verify extends Command {
	public function __construct(
		private Checks $checks,
		private OidcFlow $flow,
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
			$results = Checks::decidedBy($results, $this->userChecks($uid, $this->password($input, $output, $uid)));
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
		return array_merge([Checks::pass($name, 'authorization code + PKCE')], $this->checks->userToken($uid, $token));
	}
}
