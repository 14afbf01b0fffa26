#!/usr/bin/env bash
# Every Rust test in the workspace: unit tests next to the code, end-to-end tests in tests/.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
cd "$TAMEBI_ROOT"
cargo test --workspace --no-fail-fast --features tamebi/fault-injection
