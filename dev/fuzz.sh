#!/usr/bin/env bash
# Runs the fuzz targets (issue #32) with libFuzzer through cargo-fuzz, one at a time, each for a
# time budget, and prints per target: executions, executions per second, crashes, timeouts and
# out-of-memory reports found, and the corpus size. Exit status 1 when anything was found (or a
# target did not build), 0 otherwise.
#
#   dev/fuzz.sh [-t SECONDS] [--smoke] [--list] [TARGET...]
#     -t SECONDS   time budget per target (default $FUZZ_SECONDS, else 60)
#     --smoke      CI: run every input of the committed seeds, then fuzz for the budget from the
#                  seeds alone (a scratch corpus), so that the run depends on the repository only
#     --list       print the targets and their bounds, and exit
#     TARGET...    only these (default: all)
#   FUZZ_SANITIZER  address (default; none in a smoke) or none
#   FUZZ_TARGET_DIR the build folder (default target/fuzz)
#
# The campaign goal of issue #32 is 10 million executions or 30 minutes per target, whichever
# comes first: `dev/fuzz.sh -t 1800 TARGET` (libFuzzer's -runs stops it at 10 million).
# docs/testing.md ("Fuzzing") records the figures reached.
#
# Layout: every fuzz crate is the `fuzz/` folder of the part it tests (cargo-fuzz's layout, a
# workspace of its own); all of them build into one target folder, target/fuzz, so shared
# dependencies compile once. The committed seeds are <crate>/fuzz/seeds/<target>/ (written by
# dev/fuzz-seeds.py); the corpus libFuzzer grows is target/fuzz/corpus/<target>/ and what it
# finds goes to target/fuzz/artifacts/<target>/ (neither is committed).
#
# cargo-fuzz passes nightly-only -Z flags (sanitizer, coverage): RUSTC_BOOTSTRAP=1 lets the
# stable toolchain take them (scripts/install.d/70-fuzz.sh installs cargo-fuzz).
set -uo pipefail
. "$(dirname "$0")/../scripts/lib.sh"
cd "$TAMEBI_ROOT" || exit 1

# target  crate-dir  per-input-timeout(s)  rss-limit(MB)
# The bounds are the property "no input takes more than this time or memory" (with
# AddressSanitizer's own overhead included in the memory figure).
TARGETS="
g1_headers       fuzz                           5  1024
chat_request     fuzz                           5  1024
model_stream     fuzz                           5  1024
text_calls       fuzz                           5  1024
envelope         fuzz                           5  1024
apps_csp         fuzz                           5  1024
dav_multistatus  mcp-servers/mcp-nextcloud/fuzz 5  1024
icalendar        mcp-servers/mcp-nextcloud/fuzz 10 2048
vcard            mcp-servers/mcp-nextcloud/fuzz 5  1024
extract_text     mcp-servers/mcp-nextcloud/fuzz 10 2048
extract_office   mcp-servers/mcp-nextcloud/fuzz 10 2048
extract_pdf      mcp-servers/mcp-nextcloud/fuzz 10 2048
bridge_json      mcp-servers/mcp-mail/fuzz      5  1024
"
# The campaign's stop: 10 million executions (or the time budget first).
MAX_RUNS=10000000

seconds=${FUZZ_SECONDS:-60}
smoke=0
wanted=()
while [ $# -gt 0 ]; do
  case "$1" in
    -t) seconds=$2; shift 2 ;;
    --smoke) smoke=1; shift ;;
    --list) echo "$TARGETS" | awk 'NF { printf "%-16s %-32s -timeout=%s -rss_limit_mb=%s\n", $1, $2, $3, $4 }'; exit 0 ;;
    -h|--help) awk 'NR > 1 && /^#/ { print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    -*) echo "dev/fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *) wanted+=("$1"); shift ;;
  esac
done
for w in "${wanted[@]}"; do
  echo "$TARGETS" | awk -v t="$w" '$1 == t { found = 1 } END { exit !found }' || { echo "dev/fuzz.sh: no target $w" >&2; exit 2; }
done

# The smoke (CI) checks that every target builds and holds on its seeds: an unoptimised build
# without a sanitizer, because the optimised, instrumented build of three crates costs more CPU
# time than CI's whole budget allows. A campaign builds optimised, with AddressSanitizer.
if [ $smoke -eq 1 ]; then
  sanitizer=${FUZZ_SANITIZER:-none}; build_mode=(--dev); profile=debug
else
  sanitizer=${FUZZ_SANITIZER:-address}; build_mode=(); profile=release
fi
# One target folder for every fuzz crate (FUZZ_TARGET_DIR moves it).
out=${FUZZ_TARGET_DIR:-$TAMEBI_ROOT/target/fuzz}
triple=$(rustc -vV | sed -n 's/^host: //p')
export RUSTC_BOOTSTRAP=1

selected() {
  [ ${#wanted[@]} -eq 0 ] && return 0
  local w
  for w in "${wanted[@]}"; do [ "$w" = "$1" ] && return 0; done
  return 1
}

# Build every crate that holds a selected target (all its targets at once: one cargo run).
failed=0
built=()
while read -r name dir _; do
  [ -n "$name" ] && selected "$name" || continue
  case " ${built[*]} " in *" $dir "*) continue ;; esac
  built+=("$dir")
  echo "== building $dir (sanitizer: $sanitizer)"
  if ! cargo fuzz build "${build_mode[@]}" --fuzz-dir "$dir" --target-dir "$out" --sanitizer "$sanitizer"; then
    echo "dev/fuzz.sh: $dir did not build" >&2
    failed=1
  fi
done <<< "$TARGETS"
[ $failed -eq 0 ] || exit 1

stat() { sed -n "s/^stat::$1: *//p" "$2" | tail -1; }
count() { find "$@" -type f 2>/dev/null | wc -l; }

report=()
while read -r name dir timeout rss; do
  [ -n "$name" ] && selected "$name" || continue
  bin=$out/$triple/$profile/$name
  seeds=$dir/seeds/$name
  mkdir -p "$seeds" "$out/artifacts/$name"
  if [ $smoke -eq 1 ]; then
    corpus=$(mktemp -d)
  else
    corpus=$out/corpus/$name
    mkdir -p "$corpus"
  fi
  # A smoke keeps its own logs, so that it never writes over a campaign's that is running.
  if [ $smoke -eq 1 ]; then log=$out/smoke-$name.log; else log=$out/$name.log; fi
  echo "== fuzzing $name for ${seconds}s (-timeout=$timeout -rss_limit_mb=$rss)"
  # New inputs go into the first folder (the corpus); the seeds are read only.
  "$bin" "$corpus" "$seeds" \
    -max_total_time="$seconds" -runs=$MAX_RUNS -timeout="$timeout" -rss_limit_mb="$rss" \
    -print_final_stats=1 -artifact_prefix="$out/artifacts/$name/" >"$log" 2>&1
  status=$?
  execs=$(stat number_of_executed_units "$log")
  rate=$(stat average_exec_per_sec "$log")
  timeouts=$(grep -c 'ERROR: libFuzzer: timeout' "$log")
  ooms=$(grep -c 'ERROR: libFuzzer: out-of-memory' "$log")
  # libFuzzer stops at the first crash: 0 or 1 per run (the input is in artifacts/).
  crashes=$(grep -cE 'ERROR: (libFuzzer: deadly signal|AddressSanitizer)' "$log")
  size=$(count "$corpus" "$seeds")
  [ $smoke -eq 1 ] && rm -rf "$corpus"
  found=$((crashes + timeouts + ooms))
  if [ $status -ne 0 ] || [ $found -gt 0 ]; then
    failed=1
    echo "!! $name: libFuzzer exited $status; log: $log, inputs: $out/artifacts/$name/"
    grep -E 'ERROR:|panicked at|SUMMARY' "$log" | head -5
  fi
  report+=("$(printf '%-16s %12s %10s %8s %9s %6s %8s' "$name" "${execs:-?}" "${rate:-?}" "$crashes" "$timeouts" "$ooms" "$size")")
done <<< "$TARGETS"

echo
printf '%-16s %12s %10s %8s %9s %6s %8s\n' target executions exec/s crashes timeouts ooms corpus
printf '%s\n' "${report[@]}"
echo "(budget ${seconds}s per target, sanitizer $sanitizer$([ $smoke -eq 1 ] && echo ', smoke: seeds only'))"
exit $failed
