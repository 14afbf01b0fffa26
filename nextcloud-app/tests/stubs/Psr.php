<?php

declare(strict_types=1);

// Stubs of psr/log's LoggerInterface and psr/container's ContainerInterface (Nextcloud ships the real ones).
namespace Psr\Container {
	interface ContainerInterface {
		public function get(string $id);
		public function has(string $id): bool;
	}
}

namespace Psr\Log {

interface LoggerInterface {
	public function emergency(string|\Stringable $message, array $context = []): void;
	public function alert(string|\Stringable $message, array $context = []): void;
	public function critical(string|\Stringable $message, array $context = []): void;
	public function error(string|\Stringable $message, array $context = []): void;
	public function warning(string|\Stringable $message, array $context = []): void;
	public function notice(string|\Stringable $message, array $context = []): void;
	public function info(string|\Stringable $message, array $context = []): void;
	public function debug(string|\Stringable $message, array $context = []): void;
	public function log($level, string|\Stringable $message, array $context = []): void;
}
}
