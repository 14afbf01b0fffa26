<?php

declare(strict_types=1);

/** The island mounts here; js/tamebi-island.js and css/tamebi-island.css are added by PageController. */
?>
<div id="tamebi-island" class="tamebi-island"></div>
