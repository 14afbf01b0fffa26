#!/usr/bin/env bash
# The island: type check + fixed-name bundle, then the unit tests (bridge chokepoint, link
# targets, config reader, errors, markdown, dev host and its G1 signer against the vectors).
# The browser tests run from the Rust suite (tests/island_browser.rs) once the build exists.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
cd "$TAMEBI_ROOT/island"
npm run build
test -s dist/tamebi-island.js && test -s dist/tamebi-island.css
npx vitest run
