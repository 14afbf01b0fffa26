#!/usr/bin/env bash
# Workspace lints as policy: formatting, and clippy with warnings as errors (no unwrap, expect
# or panic outside tests; see [workspace.lints] in Cargo.toml). PHP and TypeScript are linted
# by their own suites (php -l, vue-tsc).
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
cd "$TAMEBI_ROOT"
cargo fmt --all --check
cargo clippy --workspace --all-targets --features tamebi/fault-injection -- -D warnings
echo "lint: rustfmt and clippy clean"
