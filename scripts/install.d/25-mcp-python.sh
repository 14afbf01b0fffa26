#!/usr/bin/env bash
# Installs the official Python MCP SDK (pinned, with its dependencies, in
# mcp-servers/mcp-nextcloud/tests/python/requirements.txt) into a venv next to it. The
# mcp-nextcloud test `python_client` runs it as a client from another ecosystem.
# Idempotent: skips pip when the venv already matches the pins.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
cd "$TAMEBI_ROOT/mcp-servers/mcp-nextcloud/tests/python"

if ! command -v python3 >/dev/null; then apt_install python3 python3-venv; fi
python3 -c 'import ensurepip, venv' 2>/dev/null || apt_install python3-venv

want=$(sha256sum requirements.txt | cut -d' ' -f1)
stamp=.venv/.requirements.sha256
if [ -x .venv/bin/python ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
  echo "mcp python venv up to date"
  exit 0
fi
python3 -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check -r requirements.txt
.venv/bin/python -m pip check
echo "$want" > "$stamp"
echo "mcp python venv installed ($(.venv/bin/python -m pip show mcp | grep ^Version))"
