#!/usr/bin/env bash
# Orchestrator benchmark: release builds of tamebi, scripted-model and loadgen on loopback.
#   dev/loadgen/bench.sh turns [loadgen flags…]          e.g. --concurrency 64 --duration 20
#   dev/loadgen/bench.sh streams --open-streams N [loadgen flags…]   e.g. --open-streams 10000 --hold 20
#   dev/loadgen/bench.sh fairness [--light-users 50 --flood 500 --duration 15]
#   dev/loadgen/bench.sh proxy [loadgen flags…]          the same turns through bare-proxy (the reference)
#   dev/loadgen/bench.sh soak [--concurrency 32 --duration 1800]   mixed turns (text, tools, approvals,
#                      resumes, compaction) with a figure line a minute; adds probe-mcp (the tools)
#                      and a 2,048-token context (TAMEBI_CONTEXT_TOKENS) so conversations compact
# Starts a fresh scripted model and orchestrator (temporary data dir), runs loadgen once
# against them, prints its figures, and stops both. Nothing leaves 127.0.0.1.
# BENCH_MODEL_HTTP2=N: the scripted model also speaks h2c (at most N streams per connection)
# and tamebi multiplexes its model streams over HTTP/2 (TAMEBI_MODEL_HTTP2=prior-knowledge,
# TAMEBI_MODEL_STREAMS_PER_CONNECTION=N).
#   BENCH_PG=1         the orchestrator on a throwaway PostgreSQL (dev/test-harness/pg-throwaway.sh)
#   BENCH_INSTANCES=2  two orchestrators on that PostgreSQL behind HAProxy (deploy/haproxy/haproxy.cfg);
#                      loadgen's --pid (memory figures) is the first instance
#   BENCH_CPU=1        after the run, the CPU seconds the orchestrator(s) and PostgreSQL's processes
#                      used since they started (to divide by the turns loadgen reports)
#   BENCH_PG_STATS=1   after the run, PostgreSQL's own counts: transactions committed (xact_commit
#                      of database tamebi) and statements/rows per table (pg_stat_user_tables),
#                      to divide by the turns loadgen reports
set -euo pipefail
. "$(dirname "$0")/../../scripts/lib.sh"
cd "$TAMEBI_ROOT"
mode=${1:?usage: bench.sh turns|streams|fairness|proxy|soak [loadgen flags...]}; shift

# BENCH_BIN=DIR: use the binaries in DIR as they are (e.g. a copy of an earlier build, for a
# before/after comparison in one sitting); otherwise build them.
if [ -n "${BENCH_BIN:-}" ]; then
  bin=$BENCH_BIN
else
  cargo build -q --release -p tamebi -p scripted-model -p loadgen
  if [ "$mode" = soak ]; then cargo build -q --release -p probe-mcp; fi
  if [ -n "${BENCH_OTLP:-}" ]; then cargo build -q --release -p test-harness --bin otlp-sink; fi
  bin=${CARGO_TARGET_DIR:-$TAMEBI_ROOT/target}/release
fi
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"

work=$(mktemp -d)
pgdir=
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [ -n "$pgdir" ]; then dev/test-harness/pg-throwaway.sh stop "$pgdir"; rm -rf "$pgdir"; fi
  rm -rf "$work"
}
trap cleanup EXIT
instances=${BENCH_INSTANCES:-1}
if [ -n "${BENCH_PG:-}" ] || [ "$instances" -gt 1 ]; then
  pgdir=$(mktemp -d)
  TAMEBI_DATABASE_URL=$(dev/test-harness/pg-throwaway.sh start "$pgdir")
  export TAMEBI_DATABASE_URL
fi

model_port=$(free_port)
model_args=()
if [ -n "${BENCH_MODEL_HTTP2:-}" ]; then
  model_args=(--http2-max-streams "$BENCH_MODEL_HTTP2")
  export TAMEBI_MODEL_HTTP2=prior-knowledge TAMEBI_MODEL_STREAMS_PER_CONNECTION=$BENCH_MODEL_HTTP2
fi
"$bin/scripted-model" --bind "127.0.0.1:$model_port" "${model_args[@]}" >"$work/model.log" 2>&1 &
pids+=($!)
wait_http "http://127.0.0.1:$model_port/v1/models" 30

# BENCH_OTLP=1: tracing on, exporting spans and metrics to a local OTLP receiver (otlp-sink).
if [ -n "${BENCH_OTLP:-}" ]; then
  otlp_port=$(free_port)
  "$bin/otlp-sink" --bind "127.0.0.1:$otlp_port" >"$work/otlp.log" 2>&1 &
  otlp_pid=$!
  pids+=($otlp_pid)
  for _ in $(seq 100); do grep -q listening "$work/otlp.log" 2>/dev/null && break; sleep 0.1; done
  export OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$otlp_port"
fi

# Soak: probe-mcp serves a read-only tool and a destructive one (which asks for approval).
if [ "$mode" = soak ]; then
  probe_port=$(free_port)
  "$bin/probe-mcp" --bind "127.0.0.1:$probe_port" >"$work/probe.log" 2>&1 &
  pids+=($!)
  wait_http "http://127.0.0.1:$probe_port/healthz" 30
  curl -fsS -X POST "http://127.0.0.1:$probe_port/__tools" -H 'content-type: application/json' -d '[
    {"name": "soak_lookup", "description": "Looks something up.", "inputSchema": {"type": "object"},
     "annotations": {"readOnlyHint": true}, "reply": {"text": "found it"}},
    {"name": "soak_write", "description": "Writes a note.", "inputSchema": {"type": "object"},
     "annotations": {"readOnlyHint": false, "destructiveHint": true}, "reply": {"text": "written"}}]' >/dev/null
  export TAMEBI_MCP_SERVERS="probe=http://127.0.0.1:$probe_port/mcp;trust=reads" TAMEBI_CONTEXT_TOKENS=2048
fi

export TAMEBI_PROXY_SECRET=bench-proxy-secret-0123456789abcdef0123456789
export TAMEBI_SIGNING_SECRET=bench-signing-secret-0123456789abcdef01234567
orch_port=$(free_port)
# Open streams measures memory, not fairness: a loadgen user holds many streams there.
max_turns=8; if [ "$mode" = streams ]; then max_turns=20000; fi
if [ "$mode" = proxy ]; then
  "$bin/bare-proxy" --bind "127.0.0.1:$orch_port" --model-url "http://127.0.0.1:$model_port/v1" >"$work/orchestrator.log" 2>&1 &
  orch_pid=$!
  pids+=($orch_pid)
  wait_http "http://127.0.0.1:$orch_port/v1/chat" 30
else
  start_orchestrator() { # PORT NAME
    TAMEBI_MODEL_URL="http://127.0.0.1:$model_port/v1" TAMEBI_MODEL=scripted \
    TAMEBI_BIND="127.0.0.1:$1" TAMEBI_DATA_DIR="$work/data-$2" RUST_LOG=${RUST_LOG:-warn} \
    TAMEBI_USER_TURNS_PER_MIN=${TAMEBI_USER_TURNS_PER_MIN:-0} TAMEBI_USER_MAX_TURNS=${TAMEBI_USER_MAX_TURNS:-$max_turns} \
      "$bin/tamebi" >"$work/$2.log" 2>&1 &
    pids+=($!)
    wait_http "http://127.0.0.1:$1/healthz" 30
  }
  start_orchestrator "$orch_port" orchestrator
  orch_pid=${pids[-1]}
  if [ "$instances" -gt 1 ]; then
    second_port=$(free_port)
    start_orchestrator "$second_port" orchestrator-b
    lb_port=$(free_port)
    TAMEBI_LB_BIND="127.0.0.1:$lb_port" TAMEBI_A="127.0.0.1:$orch_port" TAMEBI_B="127.0.0.1:$second_port" \
      haproxy -db -f deploy/haproxy/haproxy.cfg >"$work/haproxy.log" 2>&1 &
    pids+=($!)
    wait_http "http://127.0.0.1:$lb_port/healthz" 30
    orch_port=$lb_port
  fi
fi

common=(--url "http://127.0.0.1:$orch_port" --model-url "http://127.0.0.1:$model_port/v1" --pid "$orch_pid")
case "$mode" in
  turns|proxy) "$bin/loadgen" "${common[@]}" "$@" ;;
  streams) "$bin/loadgen" "${common[@]}" "$@" ;;
  fairness) "$bin/loadgen" "${common[@]}" --fairness "$@" ;;
  soak)
    sizes=(--size-dir "sqlite=$work/data-orchestrator")
    if [ -n "$pgdir" ]; then sizes=(--size-dir "postgres=$pgdir"); fi
    "$bin/loadgen" "${common[@]}" --soak "${sizes[@]}" "$@" ;;
  *) echo "unknown mode $mode (turns|streams|fairness|proxy|soak)" >&2; exit 2 ;;
esac
echo "--- orchestrator log (last lines)"; tail -n 5 "$work/orchestrator.log"
if [ -n "${BENCH_CPU:-}" ]; then
  # utime + stime (fields 14 and 15 of /proc/PID/stat, in clock ticks) of each process, and of
  # the waited-for children of the postmaster (cutime + cstime: backends that already exited).
  ticks() { awk '{ s += $14 + $15 + (c ? $16 + $17 : 0) } END { print s + 0 }' c="${2:-0}" $1 2>/dev/null || echo 0; }
  hz=$(getconf CLK_TCK)
  orch_files=(); for p in $(pgrep -f "^$bin/tamebi" || true); do orch_files+=("/proc/$p/stat"); done
  echo "--- CPU seconds used"
  echo "orchestrator(s)  $(echo "scale=2; $(ticks "${orch_files[*]}") / $hz" | bc)"
  if [ -n "$pgdir" ]; then
    postmaster=$(head -n 1 "$pgdir/data/postmaster.pid")
    pg_files=("/proc/$postmaster/stat"); for p in $(pgrep -P "$postmaster" || true); do pg_files+=("/proc/$p/stat"); done
    echo "postgresql       $(echo "scale=2; ($(ticks "${pg_files[*]:1}") + $(ticks "${pg_files[0]}" 1)) / $hz" | bc)"
  fi
fi
if [ -n "${BENCH_PG_STATS:-}" ] && [ -n "$pgdir" ]; then
  echo "--- PostgreSQL statistics (database tamebi)"
  sleep 11   # an idle backend reports its last counters within 10 s (PGSTAT_IDLE_INTERVAL)
  psql -X "$TAMEBI_DATABASE_URL" -c "SELECT xact_commit, xact_rollback FROM pg_stat_database WHERE datname = 'tamebi'" \
    -c "SELECT relname, seq_scan + coalesce(idx_scan, 0) AS scans, n_tup_ins AS ins, n_tup_upd AS upd, n_tup_del AS del
        FROM pg_stat_user_tables ORDER BY relname"
fi
if [ -n "${BENCH_OTLP:-}" ]; then
  kill "$orch_pid" 2>/dev/null && wait "$orch_pid" 2>/dev/null || true   # SIGTERM flushes the last spans
  kill "$otlp_pid" 2>/dev/null && wait "$otlp_pid" 2>/dev/null || true
  tail -n 1 "$work/otlp.log"
fi
if [ -n "${BENCH_KEEP_LOGS:-}" ]; then cp "$work"/*.log "$BENCH_KEEP_LOGS"/; fi
