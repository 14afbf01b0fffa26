<?php

declare(strict_types=1);

namespace OCA\Tamebi\Service\Talk;

/** Talk (app `spreed`) is not there: the bot cannot be registered, and nothing was changed. */
class TalkUnavailable extends \RuntimeException {
}
