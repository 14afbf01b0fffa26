#!/usr/bin/env bash
# Builds every workspace binary the end-to-end tests start (with the test-only fault injection).
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
cd "$TAMEBI_ROOT"
cargo build --workspace --bins --features tamebi/fault-injection
