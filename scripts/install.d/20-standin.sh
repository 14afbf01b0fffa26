#!/usr/bin/env bash
# Installs the Nextcloud stand-in (dev/nextcloud-standin): a Python venv with the exact versions
# pinned in its requirements.txt (WsgiDAV, Radicale, cheroot, PyJWT, aiosmtpd, pytest, jsonschema), plus curl, which the
# shared conformance scripts use. Idempotent: skips pip when the venv already matches the pins.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
cd "$TAMEBI_ROOT/dev/nextcloud-standin"

command -v curl >/dev/null || apt_install curl ca-certificates
if ! command -v python3 >/dev/null; then apt_install python3 python3-venv; fi
python3 -c 'import ensurepip, venv' 2>/dev/null || apt_install python3-venv

want=$(sha256sum requirements.txt | cut -d' ' -f1)
stamp=.venv/.requirements.sha256
if [ -x .venv/bin/python ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
  echo "nextcloud-standin venv up to date"
  exit 0
fi
[ -L .venv ] && rm .venv  # a developer's symlinked venv is replaced by a real one
python3 -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check -r requirements.txt
.venv/bin/python -m pip check
echo "$want" > "$stamp"
echo "nextcloud-standin venv installed ($(.venv/bin/python --version))"
