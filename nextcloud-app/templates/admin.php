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
</div>
