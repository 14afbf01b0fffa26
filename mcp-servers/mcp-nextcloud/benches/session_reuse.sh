#!/usr/bin/env bash
# Session reuse, measured: a seeded stand-in that charges every login from a credential what a
# real Nextcloud 31 charges an OIDC bearer (--login-delay-ms, default 300), the mcp-nextcloud
# release build in front of it, and curl timing
#   - the direct PROPFIND with the bearer and no cookie (what mcp-nextcloud sent per request
#     before it kept sessions), and
#   - files_list through mcp-nextcloud, call after call (the first logs in, later ones ride on
#     the session Nextcloud returned for that bearer).
# Prints the times and the stand-in's session counters for the user. Loopback only; asserts nothing.
#   mcp-servers/mcp-nextcloud/benches/session_reuse.sh [LOGIN_DELAY_MS] [CALLS]
set -euo pipefail
. "$(dirname "$0")/../../../scripts/lib.sh"
cd "$TAMEBI_ROOT"
delay=${1:-300}; calls=${2:-10}
cargo build -q --release -p mcp-nextcloud
bin=${CARGO_TARGET_DIR:-$TAMEBI_ROOT/target}/release/mcp-nextcloud
work=$(mktemp -d); pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
pw=alice-$RANDOM$RANDOM; nc_port=$(free_port); mcp_port=$(free_port)
dev/nextcloud-standin/run --state "$work/st" --bind "127.0.0.1:$nc_port" --user "alice:$pw" --user "bob:bob-$RANDOM$RANDOM" \
  --login-delay-ms "$delay" >"$work/st.out" 2>"$work/st.err" &
pids+=($!)
wait_http "http://127.0.0.1:$nc_port/status.php" 30
printf 'NC_URL=http://127.0.0.1:%s\nALICE_APP=%s\nBOB_APP=unused\n' "$nc_port" "$pw" >"$work/creds"
NC_URL=http://127.0.0.1:$nc_port MCP_BIND=127.0.0.1:$mcp_port MCP_INDEX_PATH=$work/index.db RUST_LOG=warn "$bin" >"$work/mcp.log" 2>&1 &
pids+=($!)
wait_http "http://127.0.0.1:$mcp_port/healthz" 30
direct() { curl -s -o /dev/null -w '%{time_total} ' -X PROPFIND -H 'Depth: 1' -H "Authorization: Bearer $pw" \
  "http://127.0.0.1:$nc_port/remote.php/dav/files/alice/"; }
call() { curl -s -o /dev/null -w '%{time_total} ' -X POST "http://127.0.0.1:$mcp_port/mcp" -H "Authorization: Bearer $pw" \
  -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
  -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"files_list","arguments":{"path":""}}}'; }
echo "login delay ${delay} ms"
echo -n "direct PROPFIND, bearer, no cookie (s):  "; for _ in $(seq "$calls"); do direct; done; echo
before=$(curl -s "http://127.0.0.1:$nc_port/standin/sessions?uid=alice")
echo -n "files_list through mcp-nextcloud (s):     "; for _ in $(seq "$calls"); do call; done; echo
echo "stand-in counters for alice before the MCP calls: $before"
echo "                             after the MCP calls: $(curl -s "http://127.0.0.1:$nc_port/standin/sessions?uid=alice")"
