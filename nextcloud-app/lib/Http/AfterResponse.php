<?php

declare(strict_types=1);

namespace OCA\Tamebi\Http;

use Psr\Log\LoggerInterface;

/**
 * Work that runs after the response has gone to the client. The Talk webhook needs it: Talk
 * sends the webhook while the person's message is being posted and waits for our answer (5 s
 * timeout), so the room turn (a model call of several seconds) must start only once Talk has
 * its answer.
 *
 * Why not a background job: an `IJobList` queued job runs on the next cron run (every 5 minutes
 * with system cron, or only when someone opens a page with AJAX cron): far too late for a chat
 * reply. So the work runs in this same PHP process, from a shutdown function, after the request
 * is finished: `fastcgi_finish_request()` under PHP-FPM (Nextcloud's recommended setup; the
 * client gets the response at once), `litespeed_finish_request()` under LiteSpeed; elsewhere
 * the output is flushed (the response has a Content-Length, so the client is done reading).
 * It must never let a failure of the work reach the client (it has its answer already): every
 * failure is logged, and the work itself reports to the room.
 */
class AfterResponse {
	/** Longest a piece of work may run after the response (the orchestrator's own timeout is below). */
	private const TIME_LIMIT_S = 120;
	/** @var list<callable(): void> */
	private array $work = [];

	public function __construct(
		private LoggerInterface $logger,
	) {
	}

	/** @param callable(): void $work */
	public function run(callable $work): void {
		if ($this->work === []) {
			register_shutdown_function(fn () => $this->drain());
		}
		$this->work[] = $work;
	}

	private function drain(): void {
		ignore_user_abort(true);
		@set_time_limit(self::TIME_LIMIT_S);
		self::finishRequest();
		foreach ($this->work as $work) {
			try {
				$work();
			} catch (\Throwable $e) {
				$this->logger->error('Tamebi: work after the response failed', ['exception' => $e]);
			}
		}
		$this->work = [];
	}

	private static function finishRequest(): void {
		if (function_exists('fastcgi_finish_request')) {
			fastcgi_finish_request();
			return;
		}
		if (function_exists('litespeed_finish_request')) {
			litespeed_finish_request();
			return;
		}
		while (ob_get_level() > 0) {
			ob_end_flush();
		}
		flush();
	}
}
