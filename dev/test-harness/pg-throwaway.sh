#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for benchmarks and manual runs (the Rust tests use
# dev/test-harness/src/postgres.rs, which does the same): Debian's initdb + pg_ctl on DIR,
# listening only on a unix socket in DIR, run as the `postgres` user when called as root.
#   pg-throwaway.sh start DIR   prints the TAMEBI_DATABASE_URL of database `tamebi`
#   pg-throwaway.sh stop DIR    stops it (DIR is left for the caller to remove)
# Installed by scripts/install.d/55-postgres-haproxy.sh.
set -euo pipefail
cmd=${1:?usage: pg-throwaway.sh start|stop DIR}
dir=${2:?usage: pg-throwaway.sh start|stop DIR}
bin=$(find /usr/lib/postgresql -maxdepth 2 -name bin -type d | sort -V | tail -n 1)
[ -x "$bin/initdb" ] || { echo "no PostgreSQL server under /usr/lib/postgresql: run scripts/install.d/55-postgres-haproxy.sh" >&2; exit 1; }
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
case "$cmd" in
  start)
    mkdir -p "$dir"
    if [ "$(id -u)" = 0 ]; then chown postgres "$dir"; fi
    as_pg "$bin/initdb" -D "$dir/data" -U postgres --auth=trust --encoding=UTF8 >/dev/null
    as_pg "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 \
      -o "-c listen_addresses='' -c unix_socket_directories='$dir' -c max_connections=200" start >/dev/null
    as_pg "$bin/createdb" -h "$dir" -U postgres tamebi
    echo "postgresql://postgres@localhost/tamebi?host=$dir"
    ;;
  stop) as_pg "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null || true ;;
  *) echo "unknown command $cmd (start|stop)" >&2; exit 2 ;;
esac
