#!/usr/bin/env bash
# The docs site's toolchain: Rspress and the mermaid renderer, pinned in docs/package-lock.json
# (pure JavaScript: no browser download; the diagrams are rendered without one).
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
command -v node >/dev/null || apt_install nodejs npm
cd "$TAMEBI_ROOT/docs"
npm ci --no-audit --no-fund
