#!/usr/bin/env bash
# The Nextcloud app: `php -l` on every PHP file, then PHPUnit (whose summary ends the output).
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
cd "$TAMEBI_ROOT/nextcloud-app"
find . -name '*.php' -not -path './build/*' -print0 | sort -z | xargs -0 -n1 php -l >/dev/null
echo "php -l: $(find . -name '*.php' -not -path './build/*' | wc -l) files clean"
phpunit --configuration phpunit.xml
