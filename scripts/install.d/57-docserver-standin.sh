#!/usr/bin/env bash
# Installs the OnlyOffice Document Server stand-in (dev/docserver-standin): Debian's LibreOffice
# without a GUI, which does the real conversions (`soffice --headless --convert-to`), and a Python
# venv with the exact versions pinned in its requirements.txt (PyJWT, pytest). Writer (DOCX/ODT/PDF),
# Calc (XLSX/ODS) and Impress (PPTX/ODP) cover every format files_convert offers; the -nogui
# variants are the smallest set that converts all of them. LibreOffice also made the office
# fixtures in testdata/office. Idempotent.
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/../lib.sh"
apt_install libreoffice-writer-nogui libreoffice-calc-nogui libreoffice-impress-nogui
soffice --version | sed -n 1p  # not head: under pipefail, head closing the pipe early can fail the step

cd "$TAMEBI_ROOT/dev/docserver-standin"
if ! command -v python3 >/dev/null; then apt_install python3 python3-venv; fi
python3 -c 'import ensurepip, venv' 2>/dev/null || apt_install python3-venv
want=$(sha256sum requirements.txt | cut -d' ' -f1)
stamp=.venv/.requirements.sha256
if [ -x .venv/bin/python ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
  echo "docserver-standin venv up to date"
  exit 0
fi
python3 -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check -r requirements.txt
.venv/bin/python -m pip check
echo "$want" > "$stamp"
echo "docserver-standin venv installed ($(.venv/bin/python --version))"
