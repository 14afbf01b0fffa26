#!/usr/bin/env bash
# cargo-fuzz for the fuzz targets (issue #32; dev/fuzz.sh, scripts/test.d/70-fuzz.sh), from
# crates.io at a pinned version; skipped when that version is installed. libFuzzer itself is
# C++ built by the libfuzzer-sys crate: it needs a C++ compiler (g++).
#
# Only the stable toolchain exists here: cargo-fuzz's nightly flags (-Zsanitizer=address and
# the coverage flags) are accepted with RUSTC_BOOTSTRAP=1, which dev/fuzz.sh sets, and
# AddressSanitizer links the runtime the stable toolchain ships (librustc-stable_rt.asan.a).
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
CARGO_FUZZ_VERSION=0.13.2
command -v g++ >/dev/null || apt_install g++
if cargo fuzz --version 2>/dev/null | grep -qx "cargo-fuzz $CARGO_FUZZ_VERSION"; then
  exit 0
fi
cargo install cargo-fuzz --locked --version "$CARGO_FUZZ_VERSION"
