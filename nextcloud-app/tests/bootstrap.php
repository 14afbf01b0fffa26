<?php

declare(strict_types=1);

// Loads the stubs, fakes and app classes (tests/autoload.php), then PHPUnit's test helpers.
require_once __DIR__ . '/autoload.php';
require_once __DIR__ . '/FakeUpstream.php';
require_once __DIR__ . '/Standin.php';
require_once __DIR__ . '/RealOrchestrator.php';
require_once __DIR__ . '/TalkRoom.php';
require_once __DIR__ . '/AppTestCase.php';
