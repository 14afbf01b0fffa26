#!/usr/bin/env bash
# The Nextcloud stand-in against the shared conformance checks, then its own pytest suite.
#   1. starts dev/nextcloud-standin on a free port with a fresh state dir and random app passwords,
#      without user_oidc: the checks' reference server has none (its cookie-less Deck move names the
#      source stack in the URL and the target in the body, and the body wins only without user_oidc;
#      docs/dev-standin.md, "Route parameters and JSON bodies")
#   2. runs ../shared/nextcloud-conformance/seed.sh twice (it must be idempotent) and check.sh
#   3. runs talk-check.sh (Talk's bot protocol, issue #29) with the stand-in's own occ
#   4. runs dev/nextcloud-standin/tests (behaviours the conformance checks do not cover)
# Exit status is non-zero if anything failed; the stand-in is always stopped.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
cd "$TAMEBI_ROOT"

STANDIN=dev/nextcloud-standin
CONF="$TAMEBI_ROOT/../shared/nextcloud-conformance"
work=$(mktemp -d)
pid=
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; fi
  rm -rf "$work"
}
trap cleanup EXIT

rand() { head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
alice_pw=alice-$(rand); bob_pw=bob-$(rand)
port=$(free_port)
"$STANDIN/run" --state "$work/state" --bind "127.0.0.1:$port" --without-user-oidc \
  --user "alice:$alice_pw" --user "bob:$bob_pw" >"$work/stdout" 2>"$work/stderr" &
pid=$!
for _ in $(seq 150); do
  grep -q '^ready ' "$work/stdout" 2>/dev/null && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
if ! grep -q "^ready http://127.0.0.1:$port\$" "$work/stdout"; then
  echo "stand-in did not become ready; its stderr:" >&2; cat "$work/stderr" >&2; exit 1
fi

printf 'NC_URL=http://127.0.0.1:%s\nALICE_APP=%s\nBOB_APP=%s\n' "$port" "$alice_pw" "$bob_pw" >"$work/creds"
failed=0
for run in 1 2; do
  "$STANDIN/seed" "$work/creds" || { echo "seed run $run failed" >&2; failed=1; }
done
CREDS="$work/creds" bash "$CONF/check.sh" | tee "$work/check.out"
check_status=${PIPESTATUS[0]}
[ "$check_status" -eq 0 ] || { echo "conformance: $check_status check(s) failed" >&2; failed=1; }
CREDS="$work/creds" OCC="$TAMEBI_ROOT/$STANDIN/occ --state $work/state" bash "$CONF/talk-check.sh" | tee "$work/talk.out"
talk_status=${PIPESTATUS[0]}
[ "$talk_status" -eq 0 ] || { echo "talk conformance: $talk_status check(s) failed" >&2; failed=1; }
if [ "$failed" -ne 0 ]; then echo "--- stand-in stderr (tail) ---" >&2; tail -n 40 "$work/stderr" >&2; fi

kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; pid=

(cd "$STANDIN" && .venv/bin/python -m pytest -p no:cacheprovider) || failed=1
# The OnlyOffice Document Server stand-in's own suite (ConvertService's wire format, LibreOffice).
(cd "$TAMEBI_ROOT/dev/docserver-standin" && .venv/bin/python -m pytest -p no:cacheprovider) || failed=1
exit "$failed"
