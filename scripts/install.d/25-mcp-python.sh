#!/usr/bin/env bash
# Installs the official Python MCP SDK (pinned, with its dependencies, in
# mcp-servers/mcp-nextcloud/tests/python/requirements.txt) into a venv next to it. The
# `python_client` tests of mcp-nextcloud and mcp-mail run its list_and_call.py as a client from
# another ecosystem (it also checks every published schema with the SDK's `jsonschema`).
# With --bench it also installs nextcloud-mcp-server (the server the mcp-nextcloud benchmark
# compares against, pinned in mcp-servers/mcp-nextcloud/benches/python/requirements.txt) into
# its own venv; the test path (scripts/test) never passes --bench.
# Idempotent: skips pip when a venv already matches its pins.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
cd "$TAMEBI_ROOT/mcp-servers/mcp-nextcloud/tests/python"

if ! command -v python3 >/dev/null; then apt_install python3 python3-venv; fi
python3 -c 'import ensurepip, venv' 2>/dev/null || apt_install python3-venv

# venv DIR: creates or refreshes DIR/.venv from DIR/requirements.txt.
venv() {
  local dir=$1 want stamp
  want=$(sha256sum "$dir/requirements.txt" | cut -d' ' -f1)
  stamp=$dir/.venv/.requirements.sha256
  if [ -x "$dir/.venv/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
    echo "venv up to date: $dir"
    return 0
  fi
  python3 -m venv "$dir/.venv"
  "$dir/.venv/bin/python" -m pip install -q --disable-pip-version-check -r "$dir/requirements.txt"
  "$dir/.venv/bin/python" -m pip check
  echo "$want" > "$stamp"
  echo "venv installed: $dir"
}

venv "$PWD"
if [ "${1:-}" = "--bench" ]; then
  venv "$TAMEBI_ROOT/mcp-servers/mcp-nextcloud/benches/python"
fi
