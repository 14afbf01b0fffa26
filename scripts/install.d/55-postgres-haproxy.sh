#!/usr/bin/env bash
# Installs Debian's PostgreSQL server and HAProxy for the store suite on PostgreSQL and the scale-out tests
# (issue 15). Tests never use the packaged cluster: the shared harness (dev/test-harness,
# postgres.rs) runs initdb + pg_ctl on a temp dir as the `postgres` user the package creates,
# listening on a unix socket only (or, for the TLS test, on 127.0.0.1 with a certificate that
# the test makes with openssl). Idempotent.
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/../lib.sh"
apt_install postgresql haproxy openssl
ls -d /usr/lib/postgresql/*/bin/initdb >/dev/null
id postgres >/dev/null
ls /usr/lib/postgresql/
haproxy -v | sed -n 1p  # not head: under pipefail, head closing the pipe early can fail the step with SIGPIPE
