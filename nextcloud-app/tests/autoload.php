<?php

declare(strict_types=1);

// The OCP and Mail stubs, the fakes and the app's classes (a tiny PSR-4 loader, no Composer), for
// PHPUnit's bootstrap and for tests/mail-bridge-server.php (which runs without PHPUnit).
require_once __DIR__ . '/stubs/Psr.php';
require_once __DIR__ . '/stubs/OCP.php';
require_once __DIR__ . '/stubs/Fakes.php';
require_once __DIR__ . '/stubs/Mail.php';
require_once __DIR__ . '/stubs/Talk.php';
require_once __DIR__ . '/FakeMail.php';

spl_autoload_register(function (string $class): void {
	$prefix = 'OCA\\Tamebi\\';
	if (str_starts_with($class, $prefix)) {
		$file = dirname(__DIR__) . '/lib/' . str_replace('\\', '/', substr($class, strlen($prefix))) . '.php';
		if (is_file($file)) {
			require_once $file;
		}
	}
});
