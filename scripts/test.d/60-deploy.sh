#!/usr/bin/env bash
# The Docker Compose deployment, checked without a container engine:
#   1. Debian's docker-compose parses and interpolates compose.yaml with .env.example
#      (also with both profiles on)
#   2. shellcheck on the hook and the image's scripts
#   3. the hook against a recording occ (deploy/ci/test-hook.sh): secrets only in their file,
#      idempotent, rotation, failures
#   4. deploy/ci/check_deploy.py: referenced files and Dockerfile targets exist, no literal secret,
#      the Dockerfile builds with CI's commands, every occ command (written in the hook and docs,
#      and each one the hook really ran in 3.) is a real one
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/../lib.sh"
cd "$TAMEBI_ROOT"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

docker-compose --env-file .env.example -f compose.yaml config >"$work/config.yaml"
docker-compose --env-file .env.example -f compose.yaml --profile model --profile observability --profile scale-out --profile office config --services | sort >"$work/services"
for svc in nextcloud nextcloud-cron db redis tamebi-app tamebi mcp-nextcloud mcp-mail scripted-model ollama ollama-pull otel-collector jaeger onlyoffice \
  tamebi-db-init tamebi-b tamebi-lb; do
  grep -qx "$svc" "$work/services" || { echo "compose.yaml: no service $svc" >&2; exit 1; }
done
echo "docker-compose config: ok ($(wc -l <"$work/services") services with every profile)"

# The HAProxy configuration parses with Debian's haproxy (tests/scale_out.rs runs it for real).
TAMEBI_LB_BIND=127.0.0.1:8700 TAMEBI_A=127.0.0.1:1 TAMEBI_B=127.0.0.1:2 haproxy -c -q -f deploy/haproxy/haproxy.cfg
echo "haproxy -c: ok"

shellcheck -x deploy/nextcloud/tamebi-hook.sh deploy/docker/with-secrets deploy/docker/prepare-volumes deploy/docker/stub-workspace \
  deploy/ci/fake-occ deploy/ci/test-hook.sh scripts/test.d/60-deploy.sh scripts/install.d/50-deploy.sh scripts/install.d/55-postgres-haproxy.sh
echo "shellcheck: ok"

deploy/ci/test-hook.sh "$work/hook"

python3 deploy/ci/check_deploy.py "$work/config.yaml" "$work/hook/occ.log"
