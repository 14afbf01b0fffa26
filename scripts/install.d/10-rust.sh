#!/usr/bin/env bash
# Builds every workspace binary the end-to-end tests start, with exactly the command the test
# harness uses (dev/test-harness/src/process.rs BUILD_ARGS), so the tests never rebuild them.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
cd "$TAMEBI_ROOT"
# jemalloc (the orchestrator's allocator, tikv-jemalloc-sys) is built from C with make.
command -v make >/dev/null || apt_install make
cargo build --workspace --bins --features tamebi/fault-injection
