<?php

declare(strict_types=1);

// Stubs for the Talk bot (issue #29): the OCP memory cache, app events, repair steps, and the two
// classes of Talk (spreed) that TalkBot uses, BotServer and BotServerMapper, with the members and
// behaviour of spreed 21 (lib/Model/BotServer.php, lib/Model/BotServerMapper.php: url_hash is
// unique, findByUrl throws DoesNotExistException). FileMemcache is an IMemcache on files with
// an flock per operation, so `add` is atomic across the processes of PHP's built-in server.

namespace OCP {
	/** Nextcloud 31's \OCP\ICache, reduced. */
	interface ICache {
		public function get($key);
		public function set($key, $value, $ttl = 0);
		public function remove($key);
	}

	/** Nextcloud 31's \OCP\IMemcache: the atomic operations. */
	interface IMemcache extends ICache {
		public function add($key, $value, $ttl = 0);
		public function inc($key, int $step = 1);
	}

	interface ICacheFactory {
		public function isAvailable(): bool;
		public function isLocalCacheAvailable(): bool;
		public function createDistributed(string $prefix = ''): IMemcache;
		public function createLocal(string $prefix = ''): IMemcache;
	}
}

// OCP\EventDispatcher\Event and IEventListener come from OCP.php.

namespace OCP\App\Events {
	class AppEnableEvent extends \OCP\EventDispatcher\Event {
		public function __construct(private string $appId, private array $groupIds = []) {
		}

		public function getAppId(): string {
			return $this->appId;
		}
	}
}

namespace OCP\Migration {
	interface IOutput {
		public function info(string $message): void;
	}

	interface IRepairStep {
		public function getName();
		public function run(IOutput $output);
	}
}

namespace OCA\Talk\Model {
	use OCP\AppFramework\Db\DoesNotExistException;

	class BotServer {
		private ?int $id = null;
		private string $name = '';
		private string $url = '';
		private string $urlHash = '';
		private ?string $description = null;
		private string $secret = '';
		private int $state = 0;
		private int $features = 0;

		public function getId(): ?int { return $this->id; }
		public function setId(int $id): void { $this->id = $id; }
		public function getName(): string { return $this->name; }
		public function setName(string $name): void { $this->name = $name; }
		public function getUrl(): string { return $this->url; }
		public function setUrl(string $url): void { $this->url = $url; }
		public function getUrlHash(): string { return $this->urlHash; }
		public function setUrlHash(string $urlHash): void { $this->urlHash = $urlHash; }
		public function getDescription(): ?string { return $this->description; }
		public function setDescription(?string $description): void { $this->description = $description; }
		public function getSecret(): string { return $this->secret; }
		public function setSecret(string $secret): void { $this->secret = $secret; }
		public function getState(): int { return $this->state; }
		public function setState(int $state): void { $this->state = $state; }
		public function getFeatures(): int { return $this->features; }
		public function setFeatures(int $features): void { $this->features = $features; }
	}

	/** spreed's BotServerMapper over an array (its table): the same lookups and the unique url_hash. */
	class BotServerMapper {
		/** @var array<int, BotServer> */
		public array $rows = [];
		public int $writes = 0;

		public function findByUrl(string $url): BotServer {
			foreach ($this->rows as $row) {
				if ($row->getUrlHash() === sha1($url)) {
					return clone $row;
				}
			}
			throw new DoesNotExistException('bot');
		}

		public function insert(BotServer $bot): BotServer {
			foreach ($this->rows as $row) {
				if ($row->getUrlHash() === $bot->getUrlHash()) {
					throw new \RuntimeException('UNIQUE constraint failed: oc_talk_bots_server.url_hash');
				}
			}
			$bot->setId(count($this->rows) + 1);
			$this->rows[$bot->getId()] = clone $bot;
			$this->writes++;
			return $bot;
		}

		public function update(BotServer $bot): BotServer {
			$this->rows[$bot->getId()] = clone $bot;
			$this->writes++;
			return $bot;
		}
	}
}

namespace OCA\Tamebi\Tests\Stubs {
	use OCP\ICacheFactory;
	use OCP\IMemcache;

	/** An IMemcache on files (one per key), each operation under an exclusive lock of the folder. */
	final class FileMemcache implements IMemcache {
		public function __construct(private string $dir) {
			if (!is_dir($dir)) {
				mkdir($dir, 0700, true);
			}
		}

		private function locked(callable $fn): mixed {
			$lock = fopen($this->dir . '/.lock', 'c');
			flock($lock, LOCK_EX);
			try {
				return $fn();
			} finally {
				flock($lock, LOCK_UN);
				fclose($lock);
			}
		}

		private function path(string $key): string {
			return $this->dir . '/' . hash('sha256', $key);
		}

		private function read(string $key): mixed {
			$raw = @file_get_contents($this->path($key));
			if ($raw === false) {
				return null;
			}
			[$expires, $value] = unserialize($raw);
			return $expires !== 0 && $expires < time() ? null : $value;
		}

		private function write(string $key, mixed $value, int $ttl): void {
			file_put_contents($this->path($key), serialize([$ttl > 0 ? time() + $ttl : 0, $value]));
		}

		public function get($key) {
			return $this->locked(fn () => $this->read($key));
		}

		public function set($key, $value, $ttl = 0) {
			$this->locked(fn () => $this->write($key, $value, $ttl));
			return true;
		}

		public function remove($key) {
			@unlink($this->path($key));
			return true;
		}

		public function add($key, $value, $ttl = 0) {
			return $this->locked(function () use ($key, $value, $ttl): bool {
				if ($this->read($key) !== null) {
					return false;
				}
				$this->write($key, $value, $ttl);
				return true;
			});
		}

		public function inc($key, int $step = 1) {
			return $this->locked(function () use ($key, $step) {
				$value = $this->read($key);
				if ($value !== null && !is_int($value)) {
					return false;
				}
				$this->write($key, ($value ?? 0) + $step, 120);
				return ($value ?? 0) + $step;
			});
		}
	}

	final class FileCacheFactory implements ICacheFactory {
		public function __construct(private ?string $dir) {
		}

		public function isAvailable(): bool {
			return $this->dir !== null;
		}

		public function isLocalCacheAvailable(): bool {
			return $this->dir !== null;
		}

		public function createDistributed(string $prefix = ''): IMemcache {
			return new FileMemcache($this->dir . '/' . $prefix);
		}

		public function createLocal(string $prefix = ''): IMemcache {
			return $this->createDistributed($prefix);
		}
	}
}
