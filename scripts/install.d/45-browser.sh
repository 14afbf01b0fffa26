#!/usr/bin/env bash
# What the end-to-end browser and AI SDK client tests (tests/island_browser.rs,
# tests/ai_sdk_client.rs) need beyond 40-island.sh: the island bundle built before the Rust
# suite runs (the dev host serves island/dist), and tests/node's pinned AI SDK.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
command -v node >/dev/null || apt_install nodejs npm
apt_install chromium
cd "$TAMEBI_ROOT/island"
[ -d node_modules ] || npm ci --no-audit --no-fund
npm run build
cd "$TAMEBI_ROOT/tests/node"
npm ci --no-audit --no-fund
