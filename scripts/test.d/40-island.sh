#!/usr/bin/env bash
# The island: type check + fixed-name bundle, then the unit tests (bridge chokepoint, link
# targets, config reader, errors, markdown, dev host and its G1 signer against the vectors).
# The browser tests (tests/island_browser.rs) and the AI SDK client test (tests/ai_sdk_client.rs)
# run in the Rust suite; install.d/45-browser.sh builds the bundle and installs tests/node first.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
cd "$TAMEBI_ROOT/island"
npm run build
test -s dist/tamebi-island.js && test -s dist/tamebi-island.css
test -s dist/tamebi-admin.js && test -s dist/tamebi-admin.css
npx vitest run
