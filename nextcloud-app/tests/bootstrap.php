<?php

declare(strict_types=1);

// Loads the OCP stubs, the app's classes and the test helpers. No Composer: a tiny PSR-4 loader.
require_once __DIR__ . '/stubs/Psr.php';
require_once __DIR__ . '/stubs/OCP.php';
require_once __DIR__ . '/stubs/Fakes.php';
require_once __DIR__ . '/FakeUpstream.php';
require_once __DIR__ . '/Standin.php';
require_once __DIR__ . '/AppTestCase.php';

spl_autoload_register(function (string $class): void {
	$prefix = 'OCA\\Tamebi\\';
	if (str_starts_with($class, $prefix)) {
		$file = dirname(__DIR__) . '/lib/' . str_replace('\\', '/', substr($class, strlen($prefix))) . '.php';
		if (is_file($file)) {
			require_once $file;
		}
	}
});
