#!/bin/sh
# SPDX-License-Identifier: MIT
# sync_replicas.sh — what ?sync_replicas=auto costs: dlock-bench's uncontended_pair (T = 1, 8,
# 32 threads on one client) against a master with one replica, with sync_replicas=0 (no WAIT)
# and auto (the default: every write acknowledged by the replica), side by side in each of
# ROUNDS rounds (default 3; the order alternates, so that a noisy neighbour hits both alike).
# bench/run.sh (make bench) runs it after dlock-bench; bench/report.py judges its row.
#
#   bench/sync_replicas.sh [BUILD_DIR]      (default: build-release; QUICK=1: 1 s per T)
#
# Prints ONE JSON object on stdout (workload "sync_replicas", client "dlock+replica"): per T,
# the pairs/s of each setting in each round, the cost of auto in each round (1 - auto / 0),
# its median, and the WAITs per pair under auto (from the master's INFO commandstats);
# prints a summary of the same on stderr. Placement as bench/run.sh: with 2 or more CPUs
# (and taskset; DLOCK_BENCH_PIN=0: not pinned) both redis-servers run on CPU 0 and
# dlock-bench on the others. Starts its own two redis-servers (from PATH, or
# $DLOCK_REDIS_SERVER) in a temp directory and stops them by pid at the end. Exits 1 if a
# dlock-bench run failed, 2 on setup failures.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build-release}
case "$build" in /*) ;; *) build="$here/../$build" ;; esac
bench="$build/bench/dlock-bench"
rounds=${ROUNDS:-3}
redis_server=${DLOCK_REDIS_SERVER:-$(command -v redis-server || true)}
[ -x "$bench" ] || { echo "sync_replicas.sh: no $bench (build with -DDLOCK_BUILD_BENCH=ON)" >&2; exit 2; }
[ -n "$redis_server" ] || { echo "sync_replicas.sh: redis-server not found" >&2; exit 2; }

ncpu=$(nproc)
server_pin=""
client_pin=""
placement="not pinned, $ncpu CPUs"
if [ "${DLOCK_BENCH_PIN:-1}" != 0 ] && [ "$ncpu" -ge 2 ] && command -v taskset >/dev/null 2>&1 &&
    taskset -c 0 true 2>/dev/null && taskset -c "1-$((ncpu - 1))" true 2>/dev/null; then
    server_pin="taskset -c 0"
    client_pin="taskset -c 1-$((ncpu - 1))"
    placement="master and replica on CPU 0, dlock-bench on CPU 1-$((ncpu - 1)), of $ncpu CPUs"
fi

dir=$(mktemp -d /tmp/dlock-sync-bench-XXXXXX)
pids=""
cleanup() {
    for p in $pids; do kill "$p" 2>/dev/null || true; done
    for p in $pids; do wait "$p" 2>/dev/null || true; done
    rm -rf "$dir"
}
trap cleanup EXIT INT TERM

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
master_port=$(free_port)
replica_port=$(free_port)
$server_pin "$redis_server" --port "$master_port" --bind 127.0.0.1 --save '' --appendonly no \
    --unixsocket "$dir/master.sock" --unixsocketperm 700 --dir "$dir" --logfile "$dir/master.log" &
pids="$pids $!"
$server_pin "$redis_server" --port "$replica_port" --bind 127.0.0.1 --save '' --appendonly no \
    --replicaof 127.0.0.1 "$master_port" --dir "$dir" --logfile "$dir/replica.log" &
pids="$pids $!"

# the replica acknowledges the master's writes
tries=0
until [ "$(redis-cli -s "$dir/master.sock" WAIT 1 100 2>/dev/null)" = "1" ]; do
    tries=$((tries + 1))
    [ $tries -lt 100 ] || { echo "sync_replicas.sh: the replica never synced" >&2; exit 2; }
    sleep 0.1
done

url="unix://$dir/master.sock"
out="$dir/out.jsonl"
status=0
for round in $(seq "$rounds"); do
    if [ $((round % 2)) = 1 ]; then order="0 auto"; else order="auto 0"; fi
    for setting in $order; do
        echo "sync_replicas.sh: round $round, sync_replicas=$setting" >&2
        # shellcheck disable=SC2086 # client_pin is a command prefix, in words
        $client_pin "$bench" --url "$url?sync_replicas=$setting" --only uncontended_pair \
            --placement "sync_replicas=$setting round $round; $placement" >>"$out" || status=1
    done
done

python3 - "$out" "$rounds" "$placement" <<'EOF'
import json, statistics, sys
path, rounds, placement = sys.argv[1], int(sys.argv[2]), sys.argv[3]
runs = {}  # (setting, threads) -> [(round, figures)]
errors = 0
first = {}
for line in open(path):
    o = json.loads(line)
    if o.get("workload") != "uncontended_pair":
        continue
    first = first or o
    errors += o.get("errors") or 0
    tag = o["placement"].split(";")[0].split()  # "sync_replicas=S round R"
    setting, rnd = tag[0].split("=")[1], int(tag[2])
    runs.setdefault((setting, o["params"]["threads"]), []).append((rnd, o["figures"]))
figures = {}
for t in sorted({t for _, t in runs}):
    zero = dict(runs.get(("0", t), []))
    auto = dict(runs.get(("auto", t), []))
    both = sorted(set(zero) & set(auto))
    costs = [1 - auto[r]["pairs_per_s"] / zero[r]["pairs_per_s"] for r in both if zero[r]["pairs_per_s"]]
    figures[f"T{t}"] = {
        "pairs_per_s_0": [round(zero[r]["pairs_per_s"]) for r in both],
        "pairs_per_s_auto": [round(auto[r]["pairs_per_s"]) for r in both],
        "pair_p50_us_0": [round(zero[r]["pair_p50_us"], 1) for r in both],
        "pair_p50_us_auto": [round(auto[r]["pair_p50_us"], 1) for r in both],
        "cost_auto": [round(c, 3) for c in costs],
        "cost_auto_median": round(statistics.median(costs), 3) if costs else None,
        "wait_per_pair_auto": [round(auto[r].get("wait_per_pair", float("nan")), 2) for r in both],
    }
    f = figures[f"T{t}"]
    print(f"sync_replicas.sh: T={t}: pairs/s 0 {f['pairs_per_s_0']}, auto {f['pairs_per_s_auto']}; "
          f"cost of auto {f['cost_auto']} (median {f['cost_auto_median']}); "
          f"WAITs per pair {f['wait_per_pair_auto']}", file=sys.stderr)
print(json.dumps({
    "workload": "sync_replicas", "client": "dlock+replica",
    "dlock_version": first.get("dlock_version"), "hiredis_version": first.get("hiredis_version"),
    "redis_version": first.get("redis_version"), "transport": first.get("transport"),
    "placement": placement,
    "params": {"rounds": rounds, "replicas": 1, "settings": ["0", "auto"],
               "workload": "uncontended_pair, one client", "duration_ms": first.get("params", {}).get("duration_ms")},
    "figures": figures, "errors": errors}))
EOF
exit $status
