#!/usr/bin/env bash
# Workspace lints as policy: formatting, and clippy with warnings as errors (no unwrap, expect
# or panic outside tests; see [workspace.lints] in Cargo.toml). PHP and TypeScript are linted
# by their own suites (php -l, vue-tsc).
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
cd "$TAMEBI_ROOT"
cargo fmt --all --check
cargo clippy --workspace --all-targets --features tamebi/fault-injection -- -D warnings
# `--all-targets` skips a test declared `test = false` (real_model, run by 15-real-model.sh).
cargo clippy --features tamebi/fault-injection --test real_model -- -D warnings
echo "lint: rustfmt and clippy clean"
