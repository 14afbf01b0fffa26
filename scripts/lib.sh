# Shared shell helpers for scripts/dev, scripts/test and the parts' own scripts. Source it; do not run it.
# It owns: finding the repo root, installing Debian packages once per machine boot, waiting for ports,
# and telling whether a port is free and which process group holds it.

TAMEBI_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export TAMEBI_ROOT

# apt_install PKG...: installs the Debian packages that are missing; runs `apt-get update` at most once.
apt_install() {
  local missing=()
  for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ ! -f /tmp/.tamebi-apt-updated ]; then
    DEBIAN_FRONTEND=noninteractive apt-get update -qq && touch /tmp/.tamebi-apt-updated
  fi
  echo "installing Debian packages: ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# free_port: prints a TCP port that is free on 127.0.0.1 right now.
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# wait_http URL [SECONDS]: waits until URL answers any HTTP status.
wait_http() {
  local url=$1 secs=${2:-30} i
  for ((i = 0; i < secs * 10; i++)); do
    curl -s -o /dev/null "$url" && return 0
    sleep 0.1
  done
  echo "timed out waiting for $url" >&2
  return 1
}

# port_free PORT: true when nothing listens on 127.0.0.1:PORT (a bind succeeds, as our servers' would).
port_free() {
  python3 - "$1" <<'PY'
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as our servers do: TIME_WAIT is not "in use"
try:
    s.bind(("127.0.0.1", int(sys.argv[1])))
except OSError:
    sys.exit(1)
finally:
    s.close()
PY
}

# port_holders PORT: prints "PID PGID COMMAND" for every process holding a listening TCP socket on
# PORT (any address), read from /proc. Only processes this user may inspect are seen.
port_holders() {
  python3 - "$1" <<'PY'
import os, sys
port = int(sys.argv[1])
inodes = set()
for table in ("/proc/net/tcp", "/proc/net/tcp6"):
    try:
        rows = open(table).read().splitlines()[1:]
    except OSError:
        continue
    for row in rows:
        f = row.split()
        if f[3] == "0A" and int(f[1].rsplit(":", 1)[1], 16) == port:  # 0A = LISTEN
            inodes.add(f"socket:[{f[9]}]")
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        if any(os.readlink(f"/proc/{pid}/fd/{fd}") in inodes for fd in os.listdir(f"/proc/{pid}/fd")):
            stat = open(f"/proc/{pid}/stat").read()
            comm, rest = stat[stat.index("(") + 1:stat.rindex(")")], stat[stat.rindex(")") + 2:].split()
            print(pid, rest[2], comm)
    except OSError:
        continue
PY
}

# port_owned_by PORT PGID: true when a process of process group PGID listens on PORT.
port_owned_by() {
  port_holders "$1" | awk -v g="$2" '$2 == g { found = 1 } END { exit !found }'
}
