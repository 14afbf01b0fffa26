#!/usr/bin/env bash
# The island's toolchain: its npm packages (from package-lock.json) and Debian's Chromium for
# the browser tests (playwright-core drives /usr/bin/chromium; no browser download).
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
command -v node >/dev/null || apt_install nodejs npm
apt_install chromium
cd "$TAMEBI_ROOT/island"
npm ci --no-audit --no-fund
