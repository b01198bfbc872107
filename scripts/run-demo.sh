#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# scripts/run-demo.sh [PROGRAM [ARGS...]] — run a program against a private redis-server.
#
# PROGRAM defaults to build-release/examples/dlock-demo (what `make demo` builds).
# With DLOCK_URL set, the program simply runs against that server. Otherwise a
# redis-server (from PATH, or $DLOCK_REDIS_SERVER) is started in a temp directory on a unix
# socket only (no TCP port), DLOCK_URL=unix://<dir>/redis.sock is exported, the program
# runs, and the server is stopped by its pid and the directory removed, also when the
# program fails or the script is interrupted. Exits with the program's status.
# The examples' ctests run through this script.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

if [ "$#" -gt 0 ]; then
    program=$1
    shift
else
    program="$root/build-release/examples/dlock-demo"
fi
if [[ "$program" != */* ]]; then
    program=$(command -v "$program" || echo "$program")
fi
if [ ! -f "$program" ] || [ ! -x "$program" ]; then
    echo "run-demo.sh: $program is not an executable (build it first: make build)" >&2
    exit 2
fi

if [ -n "${DLOCK_URL:-}" ]; then
    exec "$program" "$@"
fi

redis_server=${DLOCK_REDIS_SERVER:-$(command -v redis-server || true)}
if [ -z "$redis_server" ] || [ ! -x "$redis_server" ]; then
    echo "run-demo.sh: redis-server not found (install redis-server, or set DLOCK_REDIS_SERVER)" >&2
    exit 2
fi

# A unix socket path must stay short (about 100 bytes): fall back to /tmp for a long TMPDIR.
tmp_base=${TMPDIR:-/tmp}
if [ "${#tmp_base}" -gt 60 ]; then
    tmp_base=/tmp
fi
dir=$(mktemp -d "$tmp_base/dlock-demo.XXXXXX")
sock="$dir/redis.sock"
server_pid=""

cleanup() {
    if [ -n "$server_pid" ]; then
        kill "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
        server_pid=""
    fi
    rm -rf "$dir"
}
trap cleanup EXIT
trap 'cleanup; trap - INT; kill -INT $$' INT
trap 'cleanup; exit 143' TERM

"$redis_server" --port 0 --unixsocket "$sock" --unixsocketperm 700 \
    --save '' --appendonly no --daemonize no --dir "$dir" --logfile "$dir/redis.log" &
server_pid=$!

ping() {
    if command -v redis-cli >/dev/null 2>&1; then
        [ "$(redis-cli -s "$sock" ping 2>/dev/null || true)" = "PONG" ]
    else
        [ -S "$sock" ]
    fi
}

ready=0
for _ in $(seq 1 50); do # up to 5 s
    if ping; then
        ready=1
        break
    fi
    if ! kill -0 "$server_pid" 2>/dev/null; then
        break
    fi
    sleep 0.1
done
if [ "$ready" -ne 1 ]; then
    echo "run-demo.sh: redis-server did not answer PING on $sock within 5 s; its log:" >&2
    cat "$dir/redis.log" >&2 2>/dev/null || true
    exit 2
fi

export DLOCK_URL="unix://$sock"
status=0
"$program" "$@" || status=$?
exit "$status"
