<?php

declare(strict_types=1);

/** @var array $_ */
/** @var \OCP\IL10N $l */
?>
<div id="tamebi-admin" class="section">
	<h2><?php p($l->t('Tamebi')); ?></h2>
	<p><?php p($l->t('Change these with occ tamebi:setup; prove the whole chain with occ tamebi:verify --user <uid>.')); ?></p>
	<dl>
		<dt><?php p($l->t('Orchestrator URL')); ?></dt>
		<dd><?php p($_['orchestratorUrl'] !== '' ? $_['orchestratorUrl'] : $l->t('not set')); ?></dd>
		<dt><?php p($l->t('MCP server URL')); ?></dt>
		<dd><?php p($_['mcpUrl'] !== '' ? $_['mcpUrl'] : $l->t('not set')); ?></dd>
	</dl>
	<h3><?php p($l->t('Checks')); ?></h3>
	<ul>
		<?php foreach ($_['checks'] as $check): ?>
			<li><strong><?php p($check['ok'] ? $l->t('PASS') : $l->t('FAIL')); ?></strong>
				<?php p($check['name']); ?> — <?php p($check['detail']); ?></li>
		<?php endforeach; ?>
	</ul>
	<?php $orch = $_['orchestrator']; ?>
	<h3><?php p($l->t('Assistants')); ?></h3>
	<?php if (!$orch['ok']): ?>
		<p class="tamebi-admin-error"><?php p($orch['error']); ?></p>
	<?php else: ?>
		<p><?php p($l->t('What the orchestrator runs now: its TAMEBI_ASSISTANTS file and what is managed below.')); ?></p>
		<table class="grid tamebi-assistants">
			<thead><tr>
				<th><?php p($l->t('Name')); ?></th><th><?php p($l->t('Description')); ?></th>
				<th><?php p($l->t('Model')); ?></th><th><?php p($l->t('Tool patterns')); ?></th>
				<th><?php p($l->t('Servers')); ?></th><th><?php p($l->t('Tools')); ?></th>
			</tr></thead>
			<tbody>
			<?php foreach ($orch['status']['assistants'] as $a): ?>
				<tr>
					<td><?php p($a['name']); ?></td>
					<td><?php p($a['description']); ?></td>
					<td><?php p($a['model']); ?></td>
					<td><?php p(implode(', ', $a['tools'])); ?></td>
					<td><?php p(implode(', ', $a['servers'])); ?></td>
					<td><?php p((string)$a['toolCount']); ?></td>
				</tr>
			<?php endforeach; ?>
			</tbody>
		</table>
		<h3><?php p($l->t('MCP servers')); ?></h3>
		<table class="grid tamebi-servers">
			<thead><tr>
				<th><?php p($l->t('Server')); ?></th><th><?php p($l->t('Credential')); ?></th>
				<th><?php p($l->t('Answers')); ?></th><th><?php p($l->t('Tools')); ?></th>
				<th><?php p($l->t('Users\' recent calls')); ?></th>
			</tr></thead>
			<tbody>
			<?php foreach ($orch['status']['servers'] as $s): ?>
				<tr>
					<td><?php p($s['name']); ?></td>
					<td><?php p($s['auth'] === 'nextcloud' ? $l->t('the user\'s own Nextcloud token') : $l->t('none')); ?></td>
					<td><?php
						if (!$s['answers']) {
							p($l->t('no answer'));
						} elseif ($s['state'] === 'sign-in-required') {
							p($l->t('yes (asks for the user\'s sign-in)'));
						} elseif ($s['state'] === 'answered') {
							p($l->t('yes, but with HTTP %s', [(string)($s['httpStatus'] ?? '?')]));
						} else {
							p($l->t('yes'));
						}
					?></td>
					<td><?php
						if ($s['toolCount'] === null) {
							p($l->t('not known yet (listed only with a user\'s token)'));
						} elseif (($s['toolCountSource'] ?? '') === 'last-listing') {
							p($l->t('%s (in the latest user\'s listing)', [(string)$s['toolCount']]));
						} elseif (($s['toolCountSource'] ?? '') === 'seen') {
							p($l->t('%s (seen in users\' listings)', [(string)$s['toolCount']]));
						} else {
							p((string)$s['toolCount']);
						}
					?></td>
					<td><?php
						$calls = $s['calls'] ?? null;
						if ($calls === null) {
							p('—');
						} elseif ($calls['reachable'] && $calls['circuit'] === 'closed') {
							p($l->t('fine'));
						} else {
							p($l->t('failing (%s), circuit %s', [(string)($calls['lastError'] ?? '?'), (string)$calls['circuit']]));
						}
					?></td>
				</tr>
			<?php endforeach; ?>
			</tbody>
		</table>
	<?php endif; ?>
	<h3><?php p($l->t('Manage servers and assistants')); ?></h3>
	<div id="tamebi-admin-app" data-ocs-base="<?php p($_['ocsBase'] ?? ''); ?>"></div>
</div>
