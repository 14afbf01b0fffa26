#!/usr/bin/env bash
# scripts/dev as a developer meets it on a machine that already runs things (issue 19):
#   0. a bad or duplicated port variable: refused with the variable's name, exit 2
#   1. a port of ours is taken before it starts: one line names port, service and variable; exit 1;
#      nothing of ours is left running
#   2. a port is taken while the stack is starting, by a server that answers every request with
#      200 (the "something answers" trap): the orchestrator's own failure is reported with its log
#      lines, exit 1, and the services already started are all stopped
#   3. a shifted TAMEBI_DEV_PORT_BASE: the printed URLs carry the shifted ports, the island URL
#      serves Tamebi's island and reaches the orchestrator through the dev host, the docs URL
#      serves the docs site; with TAMEBI_DEV_LANGUAGE=de the page, its l10n bundle and the errors
#      are German (issue #34); SIGTERM then stops every service
#   4. a service killed while the stack runs: scripts/dev names it, exits 1 and stops the rest
#   5. scripts/dev itself SIGKILLed: its services stop anyway
#   (3 also asks the Talk demo conversation: alice mentions Tamebi, bob reads the bot's one reply)
#   6. TAMEBI_DEV_MODEL=local (issue #31): llama-server with the small model on the model port, and a
#      message sent through the island's dev host is answered by it; a bad value is refused (exit 2)
# Uses what scripts/test's install steps built (TAMEBI_DEV_NO_BUILD=1). Every scripts/dev run is
# marked with an environment variable, so "nothing of ours left" means no process carries it.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
cd "$TAMEBI_ROOT" || exit 1

work=$(mktemp -d)
passed=0 failed=0 foreign='' devpid=''
cleanup() {
  [ -n "$devpid" ] && kill "$devpid" 2>/dev/null
  [ -n "$foreign" ] && kill "$foreign" 2>/dev/null
  wait 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

check() { # DESCRIPTION COMMAND...: one assertion
  if "${@:2}"; then
    echo "ok: $1"
    passed=$((passed + 1))
  else
    echo "FAILED: $1" >&2
    failed=$((failed + 1))
  fi
}

# port_block: the first of ten consecutive ports that are all free now.
port_block() {
  python3 - <<'PY'
import random, socket
for _ in range(200):
    base = random.randrange(20000, 32000)  # below the kernel's ephemeral range (32768+)
    socks = []
    try:
        for p in range(base, base + 10):
            s = socket.socket(); s.bind(("127.0.0.1", p)); socks.append(s)
        print(base); break
    except OSError:
        pass
    finally:
        for s in socks: s.close()
PY
}

# answering_server PORT [AFTER_PORT]: someone else's server answering 200 {"status":"ok"} to every
# request on PORT; with AFTER_PORT it binds only once something listens there.
answering_server() {
  python3 - "$@" <<'PY' &
import http.server, socket, sys, time
port = int(sys.argv[1])
if len(sys.argv) > 2:
    while True:
        try:
            socket.create_connection(("127.0.0.1", int(sys.argv[2])), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.01)
class Everything(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b'{"status":"ok","installed":true}<title>Tamebi</title>'
        self.send_response(200); self.send_header("content-length", str(len(body))); self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
http.server.HTTPServer(("127.0.0.1", port), Everything).serve_forever()
PY
  foreign=$!
}

# ours MARK: pids of processes started by a scripts/dev run marked MARK.
ours() {
  grep -lsaz "^TAMEBI_DEV_TEST_MARK=$1\$" /proc/[0-9]*/environ | cut -d/ -f3 | grep -vx "$$" || true
}
nothing_left() { # MARK PORT...
  local mark=$1 p left
  shift
  left=$(ours "$mark")
  [ -z "$left" ] || { echo "   still running: $(ps -o pid=,args= -p "$(echo "$left" | paste -sd,)")" >&2; return 1; }
  for p in "$@"; do port_free "$p" || { echo "   port $p still taken" >&2; return 1; }; done
}

dev() { # MARK BASE OUT: runs scripts/dev in the foreground (bounded), prints its exit status
  local status=0
  timeout 180 env TAMEBI_DEV_TEST_MARK="$1" TAMEBI_DEV_NO_BUILD=1 TAMEBI_DEV_PORT_BASE="$2" \
    TAMEBI_DEV_DATA="$work/$1" scripts/dev >"$3" 2>&1 || status=$?
  echo "$status"
}
show() { echo "--- scripts/dev output ($1) ---" >&2; cat "$1" >&2; echo "---" >&2; }

# dev_background MARK BASE OUT [VAR=VALUE...]: starts scripts/dev in the background (devpid) and
# waits until it says it is running or has exited.
dev_background() {
  local mark=$1 base=$2 out=$3
  shift 3
  env TAMEBI_DEV_TEST_MARK="$mark" TAMEBI_DEV_NO_BUILD=1 TAMEBI_DEV_PORT_BASE="$base" TAMEBI_DEV_DATA="$work/$mark" "$@" \
    scripts/dev >"$out" 2>&1 &
  devpid=$!
  for _ in $(seq 1800); do
    grep -q '^Tamebi is running' "$out" && return 0
    kill -0 "$devpid" 2>/dev/null || return 0
    sleep 0.1
  done
}
# dev_wait_exit: waits (at most 30 s) for the background scripts/dev to end; sets `status` to its
# exit status (not a $(...) function: only this shell can wait for its own child).
dev_wait_exit() {
  status=0
  for _ in $(seq 300); do kill -0 "$devpid" 2>/dev/null || break; sleep 0.1; done
  wait "$devpid" 2>/dev/null || status=$?
  devpid=''
}

# --- 0. a bad port variable is refused before anything happens ---------------------------------
refused() { # STATUS OUT PATTERN...: exit status 2 and a line with every PATTERN
  local line
  [ "$1" = 2 ] || return 1
  line=$(grep '^scripts/dev: ' "$2") || return 1
  for pattern in "${@:3}"; do grep -q -- "$pattern" <<<"$line" || return 1; done
}
TAMEBI_DEV_ISLAND_PORT=80a80 TAMEBI_DEV_NO_BUILD=1 scripts/dev >"$work/bad.out" 2>&1
check "bad variable: exit status 2 with a line naming TAMEBI_DEV_ISLAND_PORT" \
  refused $? "$work/bad.out" "TAMEBI_DEV_ISLAND_PORT must be a port number"
TAMEBI_DEV_DOCS_PORT=8700 TAMEBI_DEV_NO_BUILD=1 scripts/dev >"$work/same.out" 2>&1
check "two services on one port: exit status 2 with a line naming both variables" \
  refused $? "$work/same.out" "port 8700" TAMEBI_DEV_ORCHESTRATOR_PORT TAMEBI_DEV_DOCS_PORT

TAMEBI_DEV_MODEL=huge TAMEBI_DEV_NO_BUILD=1 scripts/dev >"$work/model.out" 2>&1
check "bad TAMEBI_DEV_MODEL: exit status 2 with a line naming it" refused $? "$work/model.out" "TAMEBI_DEV_MODEL must be scripted or local"

# --- 1. a port taken before the start ---------------------------------------------------------
base=$(port_block)
answering_server "$base"
for _ in $(seq 100); do port_free "$base" || break; sleep 0.05; done
status=$(dev taken "$base" "$work/taken.out")
check "taken port: exit status 1 (got $status)" test "$status" = 1
check "taken port: one line names port $base, the island dev host and TAMEBI_DEV_ISLAND_PORT" \
  grep -Eq "^scripts/dev: port $base for the island dev host is already in use.*set TAMEBI_DEV_ISLAND_PORT to a free port" "$work/taken.out"
check "taken port: nothing was started, nothing of ours is left" nothing_left taken $((base + 1)) $((base + 2)) $((base + 3)) $((base + 4)) $((base + 5)) $((base + 6)) $((base + 7)) $((base + 8)) $((base + 9))
not_running() { ! grep -q 'Tamebi is running' "$1"; }
check "taken port: no false \"running\"" not_running "$work/taken.out"
check "taken port: the other program was left alone" kill -0 "$foreign"
[ "$failed" = 0 ] || show "$work/taken.out"
kill "$foreign"; wait "$foreign" 2>/dev/null; foreign=

# --- 2. a port taken during start-up by a server that answers everything ------------------------
before=$failed
base=$(port_block)
answering_server $((base + 2)) $((base + 1)) # grabs the orchestrator's port once the stand-in is up
status=$(dev race "$base" "$work/race.out")
check "taken during start-up: exit status 1 (got $status)" test "$status" = 1
check "taken during start-up: the orchestrator's exit is reported" \
  grep -Eq "^scripts/dev: the orchestrator exited during start-up \(exit status [0-9]+\); last lines of" "$work/race.out"
check "taken during start-up: with its own log lines (address in use)" grep -Eqi "^    .*(in use|os error 98)" "$work/race.out"
check "taken during start-up: no false \"running\"" not_running "$work/race.out"
check "taken during start-up: every service already started is stopped" \
  nothing_left race $((base + 0)) $((base + 1)) $((base + 3)) $((base + 4)) $((base + 5)) $((base + 6)) $((base + 7)) $((base + 8)) $((base + 9))
[ "$failed" = "$before" ] || show "$work/race.out"
kill "$foreign"; wait "$foreign" 2>/dev/null; foreign=

# --- 3. a shifted base: the printed URLs are this run's, and they serve Tamebi -------------------
before=$failed
base=$(port_block)
out=$work/shifted.out
dev_background shifted "$base" "$out" TAMEBI_DEV_LANGUAGE=de
island=$(grep -Eo '^Tamebi is running\. Open http://127\.0\.0\.1:[0-9]+/' "$out" | grep -Eo 'http://[^ ]+')
docs=$(grep -Eo '^The docs: http://127\.0\.0\.1:[0-9]+/' "$out" | grep -Eo 'http://[^ ]+')
check "shifted base: it says it is running, with the island URL on port $base (got '${island}')" test "$island" = "http://127.0.0.1:$base/"
check "shifted base: the docs URL is on port $((base + 5)) (got '${docs}')" test "$docs" = "http://127.0.0.1:$((base + 5))/"
page=$(curl -fsS -c "$work/jar" -b "$work/jar" -L "${island}?as=alice" 2>&1)
is_island_page() { grep -q '<div id="tamebi-island">' <<<"$1" && grep -q 'initial-state-tamebi-tamebi-config' <<<"$1"; }
check "shifted base: the island URL serves Tamebi's island page" is_island_page "$page"
check "shifted base: with its bundle" curl -fsS -o /dev/null "${island}island/tamebi-island.js"
check "TAMEBI_DEV_LANGUAGE=de: the page is German, as Nextcloud renders it for a German user" \
  grep -q '<html lang="de" data-locale="de">' <<<"$page"
check "TAMEBI_DEV_LANGUAGE=de: with the app's German bundle" grep -q '<script src="/apps/tamebi/l10n/de.js">' <<<"$page"
check "TAMEBI_DEV_LANGUAGE=de: which the dev host serves" curl -fsS -o /dev/null "${island}apps/tamebi/l10n/de.js"
token=$(grep -o 'data-requesttoken="[^"]*"' <<<"$page" | cut -d'"' -f2)
conversations=$(curl -fsS -b "$work/jar" -H "requesttoken: $token" "${island}apps/tamebi/api/conversations" 2>&1)
check "shifted base: the island reaches the orchestrator through the dev host (G1 signed)" \
  python3 -c 'import json, sys; json.loads(sys.argv[1])' "$conversations"
missing=$(curl -sS -b "$work/jar" -H "requesttoken: $token" "${island}apps/tamebi/api/conversations/no_such_one" 2>&1)
check "TAMEBI_DEV_LANGUAGE=de: an error is told in German (got '$missing')" grep -q '"message":"Nicht gefunden."' <<<"$missing"
is_docs_site() { curl -fsS "$1" | grep -q '<title>Tamebi'; }
check "shifted base: the docs URL serves the docs site" is_docs_site "$docs"
room=$(grep -Eo 'Talk demo conversation "Tamebi demo" .*token [a-z0-9]+' "$out" | grep -Eo '[a-z0-9]+$')
alice_pw=$(grep '^ALICE_APP=' "$work/shifted/secrets.env" | cut -d= -f2)
bob_pw=$(grep '^BOB_APP=' "$work/shifted/secrets.env" | cut -d= -f2)
chat="http://127.0.0.1:$((base + 1))/ocs/v2.php/apps/spreed/api/v1/chat/$room"
check "Talk: the demo conversation is printed (token '$room')" test -n "$room"
curl -fsS -o /dev/null -u "alice:$alice_pw" -H 'OCS-APIRequest: true' --data-urlencode 'message=@Tamebi what is a stand-up?' "$chat"
bot_replied() {
  for _ in $(seq 150); do
    curl -fsS -u "bob:$bob_pw" -H 'OCS-APIRequest: true' -H 'Accept: application/json' "$chat?lookIntoFuture=0" |
      python3 -c 'import json, sys; m = [x for x in json.load(sys.stdin)["ocs"]["data"] if x["actorType"] == "bots"]; sys.exit(0 if len(m) == 1 and "Continue in Tamebi" in m[0]["message"] else 1)' && return 0
    sleep 0.1
  done
  return 1
}
check "Talk: alice mentions Tamebi, bob reads the bot's one reply" bot_replied
kill -TERM "$devpid" 2>/dev/null
dev_wait_exit
check "shifted base: SIGTERM stops scripts/dev (exit status 143, got $status)" test "$status" = 143
check "shifted base: and every service with it" \
  nothing_left shifted $((base + 0)) $((base + 1)) $((base + 2)) $((base + 3)) $((base + 4)) $((base + 5)) $((base + 6)) $((base + 7)) $((base + 8)) $((base + 9))
[ "$failed" = "$before" ] || show "$out"

# --- 4. a service that dies while the stack runs stops the stack, with its log ------------------
before=$failed
base=$(port_block)
out=$work/dies.out
dev_background dies "$base" "$out" TAMEBI_DEV_DOCS=0
model=$(grep -Eo '^   scripted model: pid [0-9]+' "$out" | grep -Eo '[0-9]+$')
check "a service dies: the stack was running first" grep -q '^Tamebi is running' "$out"
[ -n "$model" ] && kill -KILL "$model"
dev_wait_exit
check "a service dies: scripts/dev exits 1 (got $status)" test "$status" = 1
check "a service dies: it says which one, with its log" \
  grep -Eq "^scripts/dev: the scripted model exited while running \(exit status 137\); last lines of" "$out"
check "a service dies: every other service is stopped" \
  nothing_left dies $((base + 0)) $((base + 1)) $((base + 2)) $((base + 3)) $((base + 4)) $((base + 6)) $((base + 7)) $((base + 8)) $((base + 9))
[ "$failed" = "$before" ] || show "$out"

# --- 5. scripts/dev itself killed (SIGKILL: no trap runs): the services still stop ---------------
before=$failed
base=$(port_block)
out=$work/killed.out
dev_background killed "$base" "$out" TAMEBI_DEV_DOCS=0
check "scripts/dev killed: the stack was running first" grep -q '^Tamebi is running' "$out"
kill -KILL "$devpid"
dev_wait_exit
gone() { for _ in $(seq 150); do nothing_left "$@" 2>/dev/null && return 0; sleep 0.1; done; nothing_left "$@"; }
check "scripts/dev killed: every service stops by itself (parent-death signal)" \
  gone killed $((base + 0)) $((base + 1)) $((base + 2)) $((base + 3)) $((base + 4)) $((base + 6)) $((base + 7)) $((base + 8)) $((base + 9))
[ "$failed" = "$before" ] || show "$out"

# --- 6. TAMEBI_DEV_MODEL=local: the real small model answers through the whole stack -------------
before=$failed
base=$(port_block)
out=$work/local.out
dev_background local "$base" "$out" TAMEBI_DEV_MODEL=local TAMEBI_DEV_DOCS=0
island=$(grep -Eo '^Tamebi is running\. Open http://127\.0\.0\.1:[0-9]+/' "$out" | grep -Eo 'http://[^ ]+')
check "local model: it says it is running (got '${island}')" test "$island" = "http://127.0.0.1:$base/"
check "local model: llama-server serves the model port $((base + 4))" \
  grep -q '"ok"' <<<"$(curl -fsS "http://127.0.0.1:$((base + 4))/health" 2>&1)"
page=$(curl -fsS -c "$work/jar-local" -b "$work/jar-local" -L "${island}?as=alice" 2>&1)
token=$(grep -o 'data-requesttoken="[^"]*"' <<<"$page" | cut -d'"' -f2)
answer=$(curl -sS -m 300 -b "$work/jar-local" -H "requesttoken: $token" -H 'content-type: application/json' \
  -d '{"id":"local-hello","messages":[{"id":"m1","role":"user","parts":[{"type":"text","text":"Say hello."}]}]}' \
  "${island}apps/tamebi/api/chat" 2>&1)
check "local model: a message through the dev host is answered with the model's text" grep -q '"type":"text-delta"' <<<"$answer"
check "local model: and the turn finishes" grep -q '"type":"finish"' <<<"$answer"
kill -TERM "$devpid" 2>/dev/null
dev_wait_exit
check "local model: SIGTERM stops every service, llama-server included" \
  nothing_left local $((base + 0)) $((base + 1)) $((base + 2)) $((base + 3)) $((base + 4)) $((base + 6)) $((base + 7)) $((base + 8)) $((base + 9))
[ "$failed" = "$before" ] || { show "$out"; echo "answer: $answer" >&2; }

echo "scripts/dev: $passed passed, $failed failed"
[ "$failed" = 0 ]
