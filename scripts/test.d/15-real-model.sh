#!/usr/bin/env bash
# The orchestrator against a real model server (issue #31): tests/real_model.rs with llama.cpp's
# llama-server and Gemma 3 270M from scripts/install.d/60-model.sh. One test at a time, so the
# model has the machine's cores; it prints its figures (time to first token, tokens per second).
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
cd "$TAMEBI_ROOT"
cargo test --features tamebi/fault-injection --test real_model -- --test-threads=1 --nocapture
