#!/usr/bin/env bash
# Runs deploy/nextcloud/tamebi-hook.sh against deploy/ci/fake-occ and checks what an admin relies
# on: both secrets land in the secrets file (mode 0640) and never in the hook's output, a second
# run changes nothing, --rotate-secrets replaces them, a failing occ leaves the old file alone,
# and a missing setting stops the hook. Prints the recorded occ calls' log path on stdout's last
# line for check_deploy.py, which checks every recorded call against the occ signatures.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$1
mkdir -p "$work/secrets" "$work/occ-state"
export TAMEBI_OCC="$root/deploy/ci/fake-occ" FAKE_OCC_LOG="$work/occ.log" FAKE_OCC_SECRETS_DIR="$work/occ-state"
export TAMEBI_ORCHESTRATOR_URL=http://tamebi:8700 TAMEBI_MCP_URL=http://mcp-nextcloud:8711/mcp \
  TAMEBI_INTERNAL_URL=http://localhost/ TAMEBI_SECRETS_FILE="$work/secrets/secrets.env" \
  TAMEBI_MAIL_MCP_URL=http://mcp-mail:8712/mcp
hook=$root/deploy/nextcloud/tamebi-hook.sh
fail() { echo "hook test: $*" >&2; exit 1; }
no_secret_in() { # file: neither secret appears in it
  for s in "$(cat "$work/occ-state/proxy")" "$(cat "$work/occ-state/signing")"; do
    ! grep -qF "$s" "$1" || fail "a secret reached the hook's output ($1)"
  done
}

"$hook" >"$work/run1.out" 2>&1 || { cat "$work/run1.out" >&2; fail "first run failed"; }
[ "$(grep -c '^TAMEBI_\(PROXY\|SIGNING\)_SECRET=[0-9a-f]\{64\}$' "$TAMEBI_SECRETS_FILE")" = 2 ] || fail "secrets file lacks the two lines"
[ "$(stat -c %a "$TAMEBI_SECRETS_FILE")" = 640 ] || fail "secrets file mode is $(stat -c %a "$TAMEBI_SECRETS_FILE"), not 640"
no_secret_in "$work/run1.out"
grep -q '^tamebi-hook: OIDC client: reusing' "$work/run1.out" || fail "setup's other lines should reach the log"
first=$(cat "$TAMEBI_SECRETS_FILE")
# mcp-mail's audience reaches the app's setting as JSON; an unsafe URL stops the hook.
grep -qF '["config:app:set", "tamebi", "mcp_audiences", "--value={\"mail\":\"http://mcp-mail:8712/mcp\"}"]' "$FAKE_OCC_LOG" \
  || fail "mcp_audiences was not set to mcp-mail's URL"
if TAMEBI_MAIL_MCP_URL='http://x/"}' "$hook" >"$work/quote.out" 2>&1; then fail "accepted a quote in TAMEBI_MAIL_MCP_URL"; fi

"$hook" >"$work/run2.out" 2>&1 || fail "second run failed"
[ "$(cat "$TAMEBI_SECRETS_FILE")" = "$first" ] || fail "a second run changed the secrets"
no_secret_in "$work/run2.out"

"$hook" --rotate-secrets >"$work/rotate.out" 2>&1 || fail "--rotate-secrets failed"
[ "$(cat "$TAMEBI_SECRETS_FILE")" != "$first" ] || fail "--rotate-secrets kept the old secrets"
no_secret_in "$work/rotate.out"
rotated=$(cat "$TAMEBI_SECRETS_FILE")

if FAKE_OCC_FAIL=tamebi:setup "$hook" >"$work/fail.out" 2>&1; then fail "a failing tamebi:setup went unnoticed"; fi
[ "$(cat "$TAMEBI_SECRETS_FILE")" = "$rotated" ] || fail "a failed run touched the secrets file"
[ -z "$(find "$work/secrets" -name '*.tmp.*')" ] || fail "a failed run left a temporary file"
if FAKE_OCC_FAIL=app:enable "$hook" >"$work/fail2.out" 2>&1; then fail "a failing app:enable went unnoticed"; fi

if env -u TAMEBI_MCP_URL "$hook" >"$work/unset.out" 2>&1; then fail "ran without TAMEBI_MCP_URL"; fi
grep -q TAMEBI_MCP_URL "$work/unset.out" || fail "the missing setting is not named"
if "$hook" --bogus >/dev/null 2>&1; then fail "accepted an unknown argument"; fi

# The other side of the hand-off: the orchestrator's entrypoint exports exactly the two secrets.
with=$root/deploy/docker/with-secrets
TAMEBI_SECRETS_FILE="$TAMEBI_SECRETS_FILE" "$with" env >"$work/env.out" 2>"$work/env.err"
grep -qx "$(grep '^TAMEBI_PROXY_SECRET=' "$TAMEBI_SECRETS_FILE")" "$work/env.out" || fail "with-secrets did not export the proxy secret"
grep -qx "$(grep '^TAMEBI_SIGNING_SECRET=' "$TAMEBI_SECRETS_FILE")" "$work/env.out" || fail "with-secrets did not export the signing secret"
# shellcheck disable=SC2016 # the $(...) must stay literal: it is what with-secrets must not run
printf 'TAMEBI_PROXY_SECRET=short\nTAMEBI_MODEL_URL=http://evil/v1\n$(touch %s/pwned)\n' "$work" >"$work/bad.env"
TAMEBI_SECRETS_FILE="$work/bad.env" "$with" env >"$work/bad.out" 2>"$work/bad.err"
! grep -q '^TAMEBI_PROXY_SECRET=\|^TAMEBI_MODEL_URL=http://evil' "$work/bad.out" || fail "with-secrets took a value it must refuse"
[ ! -e "$work/pwned" ] || fail "with-secrets executed the file"
! grep -q short "$work/bad.err" || fail "with-secrets printed a value"

echo "hook: secrets only in the file (0640) and in the orchestrator's environment, idempotent, rotation, failures kept the old file ($(wc -l <"$FAKE_OCC_LOG") occ calls)"
