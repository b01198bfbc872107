#!/usr/bin/env bash
# bench/run.sh [DLOCK-BENCH ARGS...] — run dlock-bench against a private redis-server and
# keep the results (what `make bench` runs, after `make build`).
#
# NOT YET HERE (a later issue): the peers (redis-py Lock, npm redlock and redis-semaphore
# under bench/peers/), the naive SET NX PX lock, the server's script ceiling
# (redis-benchmark EVALSHA) and the PNG of the hand-off distribution (gnuplot). Today this
# script runs dlock against the PING / PUBLISH floor only.
#
# Builds nothing: it runs $DLOCK_BUILD_DIR/bench/dlock-bench (default build-release,
# relative to the repository root). It starts its own redis-server (from PATH, or
# $DLOCK_REDIS_SERVER) in a temp directory on a unix socket and a loopback TCP port,
# ignoring any DLOCK_URL; runs every workload over the unix socket and floor_ping once
# more over TCP; writes bench/results/<UTC timestamp>.json (a JSON array of the objects
# dlock-bench printed) and prints a table with the ratios to the floor:
#   uncontended_pair   pair p50 / (2 x PING p50)
#   contended_handoff  hand-off p50 / (PUBLISH delivery p50 + PING p50)
# where the floor is the one dlock-bench measured just before that workload (shown in
# brackets; the floor_* rows are the long measurement at the start).
# The server is stopped by its pid when the script ends, fails or is interrupted.
#
# CPU placement: with 2 or more CPUs (and taskset), redis-server runs on CPU 0 and
# dlock-bench on the others, so every round trip crosses CPUs as it would cross a network.
# Unpinned, on a 2-vCPU VM the PING p50 flips between about 13 us (both on one CPU) and
# about 50 us (waking the other CPU) with wherever the scheduler put them, and every ratio
# with it; pinned, it stays in the second mode (still drifting by some 10 us between runs,
# hence the floor measured beside each workload). DLOCK_BENCH_PIN=0 turns pinning off; the
# placement is recorded in every JSON object.
# QUICK=1 shortens every workload (dlock-bench reads it). The table needs jq.
# Exits 1 if dlock-bench counted errors (the results are kept all the same), 2 on setup
# failures.
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
bench_cmd=("$program")
placement="not pinned, $ncpu CPUs"
if [ "${DLOCK_BENCH_PIN:-1}" != 0 ] && [ "$ncpu" -ge 2 ] && command -v taskset >/dev/null 2>&1 &&
    taskset -c 0 true 2>/dev/null && taskset -c "1-$((ncpu - 1))" true 2>/dev/null; then
    server_cmd=(taskset -c 0 "$redis_server")
    bench_cmd=(taskset -c "1-$((ncpu - 1))" "$program")
    placement="redis-server on CPU 0, dlock-bench on CPU 1-$((ncpu - 1)), of $ncpu CPUs"
fi

# A unix socket path must stay short (about 100 bytes): fall back to /tmp for a long TMPDIR.
tmp_base=${TMPDIR:-/tmp}
if [ "${#tmp_base}" -gt 60 ]; then
    tmp_base=/tmp
fi
dir=$(mktemp -d "$tmp_base/dlock-bench.XXXXXX")
sock="$dir/redis.sock"
server_pid=""

stop_server() {
    if [ -n "$server_pid" ]; then
        kill "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
        server_pid=""
    fi
}
cleanup() {
    stop_server
    rm -rf "$dir"
}
trap cleanup EXIT
trap 'cleanup; trap - INT; kill -INT $$' INT
trap 'cleanup; exit 143' TERM

ping_server() {
    if command -v redis-cli >/dev/null 2>&1; then
        [ "$(redis-cli -s "$sock" ping 2>/dev/null || true)" = "PONG" ]
    else
        [ -S "$sock" ]
    fi
}

# Starts the server on a random free-looking port; 0 once it answers, 1 if it died (the
# port was taken, say).
start_server() {
    "${server_cmd[@]}" --port "$port" --bind 127.0.0.1 --unixsocket "$sock" --unixsocketperm 700 \
        --save '' --appendonly no --daemonize no --dir "$dir" --logfile "$dir/redis.log" &
    server_pid=$!
    for _ in $(seq 1 50); do # up to 5 s
        if ping_server; then
            return 0
        fi
        if ! kill -0 "$server_pid" 2>/dev/null; then
            wait "$server_pid" 2>/dev/null || true
            server_pid=""
            return 1
        fi
        sleep 0.1
    done
    stop_server
    return 1
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

unset DLOCK_URL
lines="$dir/results.jsonl"
status=0
echo "run.sh: dlock-bench on unix://$sock ${QUICK:+(QUICK=$QUICK)}" >&2
"${bench_cmd[@]}" "$@" --url "unix://$sock" --placement "$placement" >>"$lines" || status=$?
echo "run.sh: floor_ping on redis://127.0.0.1:$port" >&2
"${bench_cmd[@]}" "$@" --url "redis://127.0.0.1:$port" --only floor_ping --placement "$placement" \
    >>"$lines" || status=$?
stop_server

mkdir -p "$root/bench/results"
stamp=$(date -u +%Y%m%dT%H%M%SZ)
out="$root/bench/results/$stamp.json"
if command -v jq >/dev/null 2>&1; then
    jq -s . "$lines" >"$out"
else
    { echo "["; sed '$!s/$/,/' "$lines"; echo "]"; } >"$out"
fi
echo "run.sh: results in ${out#"$root"/}" >&2

if ! command -v jq >/dev/null 2>&1; then
    echo "run.sh: no jq, no table (apt-get install jq); the raw lines:" >&2
    cat "$lines"
    exit "$status"
fi

echo "dlock $(jq -r '.[0].dlock_version' "$out"), redis $(jq -r '.[0].redis_version' "$out")," \
    "$(uname -sr), $(date -u '+%Y-%m-%d %H:%M UTC')${QUICK:+, QUICK=$QUICK}"
echo "$placement"
# One row per figure: workload, params, figure, value, ratio to the floor.
jq -r '
  def r1: if . == null then "-" else (. * 10 | round / 10 | tostring) end;
  def r2: if . == null then "-" else (. * 100 | round / 100 | tostring) end;
  def row($w; $p; $f; $v; $ratio): [$w, $p, $f, $v, $ratio] | @tsv;
  def per($a; $b): if $a == null or $b == null or $b == 0 then null else $a / $b end;
  (["workload", "params", "figure", "value", "ratio to floor"] | @tsv),
  (.[] | .figures as $f | .params as $p |
    if .workload == "floor_ping" then
      row("floor_ping"; .transport; "rtt p50 / p99 us"; "\($f.rtt_p50_us | r1) / \($f.rtt_p99_us | r1)"; ""),
      row("floor_ping"; .transport; "CPU us per ping client, server";
          "\($f.client_cpu_us_per_ping | r1), \($f.server_cpu_us_per_ping | r1)"; "")
    elif .workload == "floor_publish" then
      row("floor_publish"; .transport; "delivery p50 / p99 us";
          "\($f.delivery_p50_us | r1) / \($f.delivery_p99_us | r1)"; ""),
      row("floor_publish"; .transport; "CPU us per message client, server";
          "\($f.client_cpu_us_per_message | r1), \($f.server_cpu_us_per_message | r1)"; "")
    elif .workload == "uncontended_pair" then
      ("T=\($p.threads)") as $params |
      row("uncontended_pair"; $params; "pairs/s"; ($f.pairs_per_s | round | tostring); ""),
      row("uncontended_pair"; $params; "pair p50 / p99 us";
          "\($f.pair_p50_us | r1) / \($f.pair_p99_us | r1)";
          "\($f.ratio_pair_p50_to_2x_ping_p50 | r2)x 2 PING (\($f.floor_ping_p50_us | r1))"),
      row("uncontended_pair"; $params; "dlock_client_ping p50 us"; ($f.client_ping_p50_us | r1);
          "\(per($f.client_ping_p50_us; $f.floor_ping_p50_us) | r2)x PING"),
      row("uncontended_pair"; $params; "EVALSHA, PUBLISH per pair";
          "\($f.evalsha_per_pair | r2), \($f.publish_per_pair | r2)"; ""),
      row("uncontended_pair"; $params; "CPU us per pair client, server";
          "\($f.client_cpu_us_per_pair | r1), \($f.server_cpu_us_per_pair | r1)"; "")
    elif .workload == "contended_handoff" then
      ("P=\($p.workers) \($p.mode)") as $params |
      row("contended_handoff"; $params; "sections/s"; ($f.sections_per_s | round | tostring); ""),
      row("contended_handoff"; $params; "hand-off p50 / p99 us";
          "\($f.handoff_p50_us | r1) / \($f.handoff_p99_us | r1)";
          "\($f.ratio_handoff_p50_to_floor | r2)x PUB+PING (\($f.floor_publish_p50_us | r1)+\($f.floor_ping_p50_us | r1))"),
      row("contended_handoff"; $params; "from release call p50 / p99 us";
          "\($f.handoff_from_release_start_p50_us | r1) / \($f.handoff_from_release_start_p99_us | r1)";
          "\($f.ratio_handoff_from_release_start_p50_to_floor | r2)x PUB+PING"),
      row("contended_handoff"; $params; "hand-offs / sections"; ($f.handoff_share | r2); ""),
      row("contended_handoff"; $params; "fairness min/max"; ($f.fairness_min_max | r2); ""),
      row("contended_handoff"; $params; "EVALSHA, SUBSCRIBE per section";
          "\($f.evalsha_per_section | r2), \($f.subscribe_per_section | r2)"; ""),
      row("contended_handoff"; $params; "CPU us per section client, server";
          "\($f.client_cpu_us_per_section | r1), \($f.server_cpu_us_per_section | r1)"; "")
    else empty end),
  (if ([.[].errors] | add) > 0 then
     ("ERRORS" + "\t" + ([.[] | select(.errors > 0) | "\(.workload): \(.errors)"] | join(", ")))
   else empty end)
' "$out" | column -t -s $'\t'
exit "$status"
