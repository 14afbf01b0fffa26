# Shared shell helpers for scripts/dev, scripts/test and the parts' own scripts. Source it; do not run it.
# It owns: finding the repo root, installing Debian packages once per machine boot, waiting for ports.

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
