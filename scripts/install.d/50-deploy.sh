#!/usr/bin/env bash
# Installs what the deployment checks (scripts/test.d/60-deploy.sh) need: Debian's docker-compose
# (v1, only to parse and interpolate compose.yaml; no container engine is used) and shellcheck.
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/../lib.sh"
apt_install docker-compose shellcheck
docker-compose version --short
shellcheck --version | sed -n 2p
