#!/usr/bin/env bash
# Fuzz smoke (issue #32): builds every fuzz target, runs each on its committed seeds and then
# fuzzes it for 10 s from them (13 targets: a little over 2 minutes of running, under the
# 3-minute budget). A target that no longer builds, or that crashes, times out or runs out of
# memory on its seeds or in those seconds, fails the suite. The long campaign is dev/fuzz.sh
# (docs/testing.md, "Fuzzing").
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
cd "$TAMEBI_ROOT"
exec dev/fuzz.sh --smoke -t "${FUZZ_SMOKE_SECONDS:-10}"
