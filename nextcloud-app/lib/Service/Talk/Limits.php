<?php

declare(strict_types=1);

namespace OCA\Tamebi\Service\Talk;

use OCP\AppFramework\Utility\ITimeFactory;
use OCP\IMemcache;
use OCP\ICacheFactory;

/**
 * What the Talk webhook must remember for a short while, in Nextcloud's memory cache
 * (distributed when one is configured, so every web server sees the same): the randoms of
 * webhooks already accepted (replay), and fixed-window counters for the per-room and per-person
 * rate limits. `ICache::add` is atomic on APCu, Redis and Memcached, so two requests carrying
 * the same random cannot both pass.
 * It must never fail open: without a memory cache (`ready()` false) the webhook refuses
 * everything rather than accept replays.
 */
class Limits {
	/** How long a webhook's random is remembered. Talk signs no time, so this bounds the replay window we close. */
	public const REPLAY_WINDOW_S = 3600;
	/** Turns per person per window, and per room per window. */
	public const PER_USER = 5;
	public const PER_ROOM = 15;
	public const RATE_WINDOW_S = 60;

	private ?IMemcache $cache = null;

	public function __construct(
		private ICacheFactory $caches,
		private ITimeFactory $time,
	) {
	}

	/** Whether a memory cache is there to remember randoms in. */
	public function ready(): bool {
		return $this->cache() !== null;
	}

	/** True the first time `$random` is seen in the window; false for a replay (or without a cache). */
	public function firstUse(string $random): bool {
		$cache = $this->cache();
		return $cache !== null && $cache->add('seen/' . hash('sha256', $random), 1, self::REPLAY_WINDOW_S) === true;
	}

	/** Counts one use of `$bucket` ("room/<token>", "user/<uid>"); false once its limit is passed. */
	public function take(string $bucket, int $limit): bool {
		$cache = $this->cache();
		if ($cache === null) {
			return false;
		}
		$key = 'rate/' . hash('sha256', $bucket) . '/' . intdiv($this->time->getTime(), self::RATE_WINDOW_S);
		$cache->add($key, 0, 2 * self::RATE_WINDOW_S);
		$count = $cache->inc($key);
		return is_int($count) && $count <= $limit;
	}

	/** True once per window and bucket: the "slow down" reply is posted once, not for every message. */
	public function noticeOnce(string $bucket): bool {
		$cache = $this->cache();
		$key = 'notice/' . hash('sha256', $bucket) . '/' . intdiv($this->time->getTime(), self::RATE_WINDOW_S);
		return $cache !== null && $cache->add($key, 1, 2 * self::RATE_WINDOW_S) === true;
	}

	private function cache(): ?IMemcache {
		if ($this->cache === null) {
			if ($this->caches->isAvailable()) {
				$this->cache = $this->caches->createDistributed('tamebi-talk');
			} elseif ($this->caches->isLocalCacheAvailable()) {
				$this->cache = $this->caches->createLocal('tamebi-talk');
			}
		}
		return $this->cache;
	}
}
