#!/usr/bin/env bash
# The mail bridge's shared contract suite (dev/mail-contract): the same pytest tests, every response
# validated against dev/mail-contract/mail-bridge.schema.json, run against BOTH implementations —
# the stand-in (dev/nextcloud-standin, Maildirs + aiosmtpd sink) and the tamebi app's PHP bridge under
# `php -S` with a fake Mail backend (nextcloud-app/tests/mail-bridge-server.php). Needs the stand-in's
# venv (install.d/20-standin.sh: pytest, requests, jsonschema) and PHP (install.d/30-php.sh).
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
cd "$TAMEBI_ROOT/dev/mail-contract"
../nextcloud-standin/.venv/bin/python -m pytest
