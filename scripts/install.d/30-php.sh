#!/usr/bin/env bash
# Installs what the Nextcloud app's checks need: the PHP interpreter with the extensions the app
# and its tests use (xml for PHPUnit's config, mbstring, curl for the streaming proxy) and Debian's
# PHPUnit. Debian bookworm ships PHP 8.2 and PHPUnit 9.6.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
apt_install php-cli php-xml php-mbstring php-curl phpunit
php --version | sed -n 1p  # sed reads to the end: head could end the pipe early (SIGPIPE under pipefail)
phpunit --version
