<?php

declare(strict_types=1);

namespace OCA\Tamebi\Migration;

use OCA\Tamebi\Service\Talk\TalkBot;
use OCP\Migration\IOutput;
use OCP\Migration\IRepairStep;

/**
 * Repair step (install and upgrade of Tamebi): registers the Talk bot again when it was set up
 * before (`occ tamebi:setup --talk`) and Talk is there, so an update of either app, or Talk
 * installed again after it was removed, leaves a working bot. Does nothing otherwise: it never
 * installs a bot nobody asked for. Talk enabled later is handled by TalkEnabledListener.
 */
class RegisterTalkBot implements IRepairStep {
	public function __construct(
		private TalkBot $talkBot,
	) {
	}

	public function getName(): string {
		return 'Register the Tamebi Talk bot again';
	}

	public function run(IOutput $output): void {
		if ($this->talkBot->refresh()) {
			$output->info('Tamebi Talk bot registered');
		}
	}
}
