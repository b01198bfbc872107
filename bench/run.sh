#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/run.sh [DLOCK-BENCH ARGS...] — dlock, the floor, the naive lock and the peers, in one
# run against one private redis-server on one machine (what `make bench` runs, after
# `make build`). The design notes' BENCHMARKS.md says what is measured; docs/benchmarks.md
# shows the latest table and picture.
#
# Builds nothing: it runs $DLOCK_BUILD_DIR/bench/dlock-bench (default build-release,
# relative to the repository root). It starts its own redis-server (from PATH, or
# $DLOCK_REDIS_SERVER) in a temp directory on a unix socket and a loopback TCP port,
# ignoring any DLOCK_URL, and 4 more on unix sockets only (redis1.sock .. redis4.sock), so
# redlock_acquire has 5 independent masters (if one of those does not start, dlock-bench
# runs without them and skips redlock_acquire, saying so). Over the unix socket it runs,
# each bounded in time:
#
#   1. dlock-bench: the floor (PING, PUBLISH delivery, the script ceiling through
#      redis-benchmark), every dlock workload (redlock_acquire on the main server and the
#      4 others), the naive SET NX PX lock, and layout_floor (dlock's lock scripts alone
#      over plain hiredis: the ceiling of Redisson's layout); then floor_ping once more over TCP; then
#      dlock-bench-renewal (bench/renewal.c: 100k watchdog leases, QUICK=1 10k, held for 3
#      periods; it prints the renewal target's line, met or missed, on stderr); then
#      bench/sync_replicas.sh: uncontended_pair with sync_replicas=0 and auto against a master
#      and one replica of its own, side by side in 3 rounds (report.py's table 6);
#   2. the redis-py peer (bench/peers/python/redis_py_lock.py, Debian's python3-redis),
#      with redis-py's default retry interval and with the lowest;
#   3. the npm peers (bench/peers/node/peer.js: redlock and redis-semaphore, on ioredis),
#      each with its default retry interval and with the lowest;
#   4. the Cluster row: bench/cluster.sh's contended part (contended_handoff through
#      redis-cluster:// on a 3-master cluster it starts itself; CLUSTER_ROUNDS rounds, 3 by
#      default, 1 with QUICK=1), judged by bench/report.py's section 5 on the median.
#
# It writes bench/results/<UTC timestamp>.json (a JSON array of every object printed),
# prints the tables (bench/report.py: each figure, its ratio to the floor, dlock against the
# naive lock and each peer, and each target met or missed; also saved as <stamp>.txt) and
# draws the hand-off latency distribution of dlock, the naive lock and the peers as
# bench/results/<stamp>-handoff.png and their pairs/s against threads as
# <stamp>-throughput.png (gnuplot). The servers are stopped by their pids when the script
# ends, fails or is interrupted.
#
# What the peers and the picture need is installed HERE when missing, never by the build:
#   python3-redis, gnuplot-nox   apt-get install, when run as root (else: skipped, with
#                                the reason printed)
#   redlock, redis-semaphore,    npm ci into bench/peers/node/node_modules (from the
#   ioredis                      committed package.json and package-lock.json)
# Whatever cannot be installed (no root, registry unreachable, no node) is skipped with a
# printed reason; the rest of the run goes on. DLOCK_BENCH_INSTALL=0 installs nothing;
# DLOCK_BENCH_PEERS=0 runs no peer.
#
# CPU placement: with 2 or more CPUs (and taskset), every redis-server runs on CPU 0 and
# dlock-bench and the peers on the others, so every round trip crosses CPUs as it would
# cross a network. Unpinned, on a 2-vCPU VM the PING p50 flips between about 13 us (both
# on one CPU) and about 50 us (waking the other CPU) with wherever the scheduler put them,
# and every ratio with it; pinned, it stays in the second mode (still drifting by some
# 10 us between runs, hence the floor dlock-bench measures beside each workload; the peers
# are held against the floor_* rows measured at the start). DLOCK_BENCH_PIN=0 turns
# pinning off; the placement is recorded in every JSON object.
#
# DLOCK_BENCH_BASELINE=EARLIER.json holds the async face and the watchdog against an earlier
# run's results (bench/report.py --baseline): issue 29's "no worse than before".
#
# QUICK=1 shortens every workload (1 s instead of 3 s; fewer floor samples; renewal_scale
# without 100k locks, waiters_scale without 10k): under 2 minutes instead of about 4-5.
# Exits 1 if any program counted errors or failed (the results are kept all the same),
# 2 on setup failures.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${DLOCK_BUILD_DIR:-build-release}
[[ "$build_dir" = /* ]] || build_dir="$root/$build_dir"
program="$build_dir/bench/dlock-bench"
if [ ! -x "$program" ]; then
    echo "run.sh: $program is not built (make build, or set DLOCK_BUILD_DIR)" >&2
    exit 2
fi
redis_server=${DLOCK_REDIS_SERVER:-$(command -v redis-server || true)}
if [ -z "$redis_server" ] || [ ! -x "$redis_server" ]; then
    echo "run.sh: redis-server not found (install redis-server, or set DLOCK_REDIS_SERVER)" >&2
    exit 2
fi

ncpu=$(nproc)
server_cmd=("$redis_server")
client_pin=() # prefix of every client program: dlock-bench and the peers
placement="not pinned, $ncpu CPUs"
if [ "${DLOCK_BENCH_PIN:-1}" != 0 ] && [ "$ncpu" -ge 2 ] && command -v taskset >/dev/null 2>&1 &&
    taskset -c 0 true 2>/dev/null && taskset -c "1-$((ncpu - 1))" true 2>/dev/null; then
    server_cmd=(taskset -c 0 "$redis_server")
    client_pin=(taskset -c "1-$((ncpu - 1))")
    placement="redis-server on CPU 0, dlock-bench and the peers on CPU 1-$((ncpu - 1)), of $ncpu CPUs"
fi
quick=0
[ "${QUICK:-}" = 1 ] && quick=1

# ---- what the peers and the picture need: installed here when missing, never by the build --
apt_updated=0
# apt_install PACKAGE: 0 once installed; 1 (with the reason printed) when it cannot be.
apt_install() {
    local why=""
    if [ "${DLOCK_BENCH_INSTALL:-1}" = 0 ]; then
        why="DLOCK_BENCH_INSTALL=0"
    elif [ "$(id -u)" -ne 0 ]; then
        why="not root: sudo apt-get install $1"
    elif ! command -v apt-get >/dev/null 2>&1; then
        why="no apt-get"
    fi
    if [ -n "$why" ]; then
        echo "run.sh: $1 is missing and this run does not install it ($why)" >&2
        return 1
    fi
    echo "run.sh: installing $1 (apt-get)" >&2
    if DEBIAN_FRONTEND=noninteractive timeout 300 apt-get install -y -q --no-install-recommends "$1" \
        >/dev/null 2>&1; then
        return 0
    fi
    if [ "$apt_updated" = 0 ]; then # a fresh machine may have no package lists yet
        apt_updated=1
        timeout 300 apt-get update -q >/dev/null 2>&1 || true
        DEBIAN_FRONTEND=noninteractive timeout 300 apt-get install -y -q --no-install-recommends \
            "$1" >/dev/null 2>&1 && return 0
    fi
    echo "run.sh: apt-get install $1 failed" >&2
    return 1
}

# A python3 that imports redis: Debian's (/usr/bin/python3) first, where python3-redis goes.
find_redis_python() {
    for py in /usr/bin/python3 "$(command -v python3 || true)"; do
        if [ -n "$py" ] && [ -x "$py" ] && "$py" -c 'import redis' >/dev/null 2>&1; then
            echo "$py"
            return 0
        fi
    done
    return 1
}

peers=${DLOCK_BENCH_PEERS:-1}
redis_python=""
if [ "$peers" != 0 ]; then
    redis_python=$(find_redis_python || true)
    if [ -z "$redis_python" ] && apt_install python3-redis; then
        redis_python=$(find_redis_python || true)
    fi
    [ -n "$redis_python" ] || echo "run.sh: skipping the redis-py peer (no python3-redis)" >&2
fi
node_dir="$root/bench/peers/node"
node_ok=0
if [ "$peers" != 0 ]; then
    if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
        echo "run.sh: skipping the npm peers (no node/npm: apt-get install nodejs npm)" >&2
    elif [ -d "$node_dir/node_modules/redlock" ] && [ -d "$node_dir/node_modules/redis-semaphore" ] &&
        [ -d "$node_dir/node_modules/ioredis" ]; then
        node_ok=1
    elif [ "${DLOCK_BENCH_INSTALL:-1}" = 0 ]; then
        echo "run.sh: skipping the npm peers (not installed in bench/peers/node; DLOCK_BENCH_INSTALL=0)" >&2
    else
        echo "run.sh: installing redlock, redis-semaphore, ioredis into bench/peers/node (npm ci)" >&2
        npm_log=$(mktemp "${TMPDIR:-/tmp}/dlock-bench-npm.XXXXXX")
        if timeout 180 npm ci --prefix "$node_dir" --no-audit --no-fund --loglevel=error \
            >"$npm_log" 2>&1; then
            node_ok=1
        else
            echo "run.sh: skipping the npm peers: npm ci failed (registry unreachable?):" >&2
            tail -5 "$npm_log" >&2 || true
        fi
        rm -f "$npm_log"
    fi
fi
gnuplot_ok=0
if command -v gnuplot >/dev/null 2>&1 || apt_install gnuplot-nox; then
    gnuplot_ok=1
else
    echo "run.sh: no gnuplot: the tables only, no PNG" >&2
fi
report_python=${redis_python:-$(command -v python3 || true)}

# A unix socket path must stay short (about 100 bytes): fall back to /tmp for a long TMPDIR.
tmp_base=${TMPDIR:-/tmp}
if [ "${#tmp_base}" -gt 60 ]; then
    tmp_base=/tmp
fi
dir=$(mktemp -d "$tmp_base/dlock-bench.XXXXXX")
sock="$dir/redis.sock"
server_pid=""
extra_pids=() # redlock_acquire's other masters, on $dir/redis1.sock .. redis4.sock

stop_server() {
    local pid
    for pid in "$server_pid" ${extra_pids[@]+"${extra_pids[@]}"}; do
        if [ -n "$pid" ]; then
            kill "$pid" 2>/dev/null || true
            wait "$pid" 2>/dev/null || true
        fi
    done
    server_pid=""
    extra_pids=()
}
cleanup() {
    stop_server
    rm -rf "$dir"
}
trap cleanup EXIT
trap 'cleanup; trap - INT; kill -INT $$' INT
trap 'cleanup; exit 143' TERM

# ping_server [SOCKET]: 0 once the server on SOCKET (default: the main one) answers.
ping_server() {
    local socket=${1:-$sock}
    if command -v redis-cli >/dev/null 2>&1; then
        [ "$(redis-cli -s "$socket" ping 2>/dev/null || true)" = "PONG" ]
    else
        [ -S "$socket" ]
    fi
}

# await_server PID SOCKET: 0 once it answers (up to 5 s), 1 if it died or stayed silent.
await_server() {
    for _ in $(seq 1 50); do
        if ping_server "$2"; then
            return 0
        fi
        kill -0 "$1" 2>/dev/null || return 1
        sleep 0.1
    done
    return 1
}

# Starts the server on a random free-looking port; 0 once it answers, 1 if it died (the
# port was taken, say).
start_server() {
    "${server_cmd[@]}" --port "$port" --bind 127.0.0.1 --unixsocket "$sock" --unixsocketperm 700 \
        --save '' --appendonly no --daemonize no --dir "$dir" --logfile "$dir/redis.log" &
    server_pid=$!
    if await_server "$server_pid" "$sock"; then
        return 0
    fi
    stop_server
    return 1
}

# start_extra_server N: a master for redlock_acquire on $dir/redisN.sock, no TCP port,
# pinned like the main one. 0 once it answers; 1 (its pid still in extra_pids, for
# stop_server) if not.
start_extra_server() {
    local socket="$dir/redis$1.sock"
    "${server_cmd[@]}" --port 0 --unixsocket "$socket" --unixsocketperm 700 \
        --save '' --appendonly no --daemonize no --dir "$dir" --logfile "$dir/redis$1.log" &
    extra_pids+=($!)
    await_server "$!" "$socket"
}

started=0
for _ in 1 2 3 4 5; do
    port=$((20000 + RANDOM % 40000))
    if start_server; then
        started=1
        break
    fi
done
if [ "$started" -ne 1 ]; then
    echo "run.sh: redis-server did not start; its log:" >&2
    cat "$dir/redis.log" >&2 2>/dev/null || true
    exit 2
fi
redlock_args=(--redlock-urls "unix://$sock")
for n in 1 2 3 4; do
    if ! start_extra_server "$n"; then
        echo "run.sh: redis-server $n for redlock_acquire did not start: running dlock-bench" \
            "without --redlock-urls (redlock_acquire skipped)" >&2
        tail -5 "$dir/redis$n.log" >&2 2>/dev/null || true # its reason, when it got to log one
        redlock_args=()
        break
    fi
    redlock_args[1]+=",unix://$dir/redis$n.sock"
done

unset DLOCK_URL
lines="$dir/results.jsonl"
status=0
load_start=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo "?")
t_start=$(date +%s)
if [ "$quick" = 1 ]; then bound=240; else bound=600; fi # per program, seconds
# run_client NAME CMD...: one client program, its JSON lines into $lines; its failure is
# reported and remembered, never fatal.
run_client() {
    local name=$1 rc=0 t0
    shift
    t0=$(date +%s)
    echo "run.sh: $name" >&2
    timeout --signal=TERM --kill-after=10 "$bound" ${client_pin[@]+"${client_pin[@]}"} "$@" \
        >>"$lines" || rc=$?
    echo "run.sh:   $(($(date +%s) - t0)) s" >&2
    if [ "$rc" -ne 0 ]; then
        echo "run.sh: $name exited $rc$([ "$rc" = 124 ] && echo " (over ${bound}s: stopped)")" >&2
        status=1
    fi
}
run_client "dlock-bench on unix://$sock ${QUICK:+(QUICK=$QUICK)}" \
    "$program" "$@" --url "unix://$sock" ${redlock_args[@]+"${redlock_args[@]}"} --placement "$placement"
run_client "floor_ping on redis://127.0.0.1:$port" \
    "$program" "$@" --url "redis://127.0.0.1:$port" --only floor_ping --placement "$placement"
renewal_program="$build_dir/bench/dlock-bench-renewal"
if [ -x "$renewal_program" ]; then
    run_client "dlock-bench-renewal on unix://$sock" \
        "$renewal_program" --url "unix://$sock" --placement "$placement"
else
    echo "run.sh: $renewal_program is not built: no renewal target" >&2
fi
# what ?sync_replicas=auto costs against 0: a master and one replica of its own, pinned as
# here (bench/sync_replicas.sh; one JSON object, report.py's table 6)
echo "run.sh: sync_replicas.sh (a master and one replica)" >&2
t0=$(date +%s)
if ! DLOCK_REDIS_SERVER="$redis_server" timeout --signal=TERM --kill-after=10 "$bound" \
    "$root/bench/sync_replicas.sh" "$build_dir" >>"$lines"; then
    echo "run.sh: sync_replicas.sh failed" >&2
    status=1
fi
echo "run.sh:   $(($(date +%s) - t0)) s" >&2
if [ -n "$redis_python" ]; then
    for variant in default min_retry; do
        run_client "redis-py Lock ($variant)" "$redis_python" "$root/bench/peers/python/redis_py_lock.py" \
            --url "unix://$sock" --variant "$variant" --placement "$placement"
    done
fi
if [ "$node_ok" = 1 ]; then
    for lib in redlock redis-semaphore; do
        for variant in default min_retry; do
            run_client "$lib ($variant)" node "$node_dir/peer.js" --lib "$lib" --variant "$variant" \
                --url "unix://$sock" --placement "$placement"
        done
    done
fi
stop_server
# The Cluster row: bench/cluster.sh's contended part on a 3-master cluster of its own, its
# JSON lines (workload cluster_contended_handoff) into the same results; it pins as above.
if command -v redis-cli >/dev/null 2>&1; then
    echo "run.sh: bench/cluster.sh (contended, 3 masters)" >&2
    t0=$(date +%s)
    # three rounds: the longest wait is one process's worst moment, and a single round's
    # verdict flipped between runs of the same code on this kind of machine (7.8 / 12.9 ms)
    if [ "$quick" = 1 ]; then cluster_rounds=1; else cluster_rounds=3; fi
    if ! ROUNDS=${CLUSTER_ROUNDS:-$cluster_rounds} CLUSTER_PARTS=contended CLUSTER_JSONL="$lines" \
        timeout --signal=TERM --kill-after=10 "$bound" "$root/bench/cluster.sh" "$build_dir"; then
        echo "run.sh: bench/cluster.sh failed" >&2
        status=1
    fi
    echo "run.sh:   $(($(date +%s) - t0)) s" >&2
else
    echo "run.sh: no redis-cli: no Cluster row" >&2
fi
load_end=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo "?")

mkdir -p "$root/bench/results"
stamp=$(date -u +%Y%m%dT%H%M%SZ)
out="$root/bench/results/$stamp.json"
{ echo "["; sed '$!s/$/,/' "$lines"; echo "]"; } >"$out"
echo "run.sh: results in ${out#"$root"/}" >&2
if [ -z "$report_python" ]; then
    echo "run.sh: no python3, no table; the raw lines are in ${out#"$root"/}" >&2
    exit "$status"
fi
png="$root/bench/results/$stamp-handoff.png"
png_throughput="$root/bench/results/$stamp-throughput.png"
report_args=(--elapsed "$(($(date +%s) - t_start))" --load "$load_start -> $load_end"
    --command "${QUICK:+QUICK=$QUICK }make bench")
[ "$gnuplot_ok" = 1 ] && report_args+=(--png "$png" --png-throughput "$png_throughput")
# an earlier run's results, for issue 29's "no worse than before" rows (report.py --baseline)
[ -n "${DLOCK_BENCH_BASELINE:-}" ] && report_args+=(--baseline "$DLOCK_BENCH_BASELINE")
"$report_python" "$root/bench/report.py" "$out" "${report_args[@]}" |
    tee "$root/bench/results/$stamp.txt" || status=1
[ "$gnuplot_ok" = 1 ] && [ -f "$png" ] && echo "run.sh: pictures in ${png#"$root"/} and ${png_throughput#"$root"/}" >&2
if [ "$("$report_python" -c 'import json,sys; print(sum((o.get("errors") or 0) for o in json.load(open(sys.argv[1]))))' "$out" 2>/dev/null || echo 0)" != 0 ]; then
    status=1
fi
exit "$status"
