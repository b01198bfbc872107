#!/bin/sh
# SPDX-License-Identifier: MIT
# cluster.sh — the lock through redis-cluster://, on clusters this script starts itself:
#
#   pair        throughput: dlock-bench's uncontended_pair (T threads on one client, a lock
#               name of their own each, the names spread over the slots) on a cluster of 1
#               master against one of 3 masters, alternating the two clusters ROUNDS times
#               in one run so that a noisy neighbour hits both alike. The goal is at least
#               2.5x the pairs/s with 3 masters.
#   contended   no starvation in a Cluster: dlock-bench's contended_handoff (P workers on ONE
#               lock; P = 4 processes is the row judged) on the 3-master cluster, ROUNDS
#               times. Each JSON line is written with the workload renamed
#               cluster_contended_handoff and params.masters = 3, so that bench/report.py
#               judges it on its own row (longest wait <= 10 ms, sections min/max per
#               process >= 0.5), never mixed with the single server's contended_handoff.
#
#   bench/cluster.sh [BUILD_DIR]     (default: build; QUICK=1 for 1 s per value)
#   CLUSTER_PARTS="pair contended"   which parts (default both)
#   CLUSTER_JSONL=FILE               append the JSON lines there instead of printing them
#                                    (bench/run.sh: the contended part in `make bench`)
#   BASELINE_BUILD=DIR               contended: also run DIR's dlock-bench, each round just
#                                    before this build's, on the same cluster (before/after
#                                    side by side); its lines say params.build = "baseline"
#
# The clusters have no replicas (a replica only adds the replication stream's load to the
# same cores). Prints dlock-bench's JSON lines, then a summary per part. With 2 or more CPUs
# and taskset, every redis-server runs on CPU 0 and dlock-bench on the others, as bench/run.sh
# places them (DLOCK_BENCH_PIN=0: not pinned). Starts its own redis-servers in a temp
# directory and stops them by pid at the end.
set -eu

build=${1:-build}
bench="$build/bench/dlock-bench"
rounds=${ROUNDS:-2}
parts=${CLUSTER_PARTS:-pair contended}
[ -x "$bench" ] || { echo "cluster.sh: no $bench (build with -DDLOCK_BUILD_BENCH=ON)" >&2; exit 2; }

dir=$(mktemp -d /tmp/dlock-cluster-bench-XXXXXX)
pids=""
cleanup() {
    for p in $pids; do kill "$p" 2>/dev/null || true; done
    for p in $pids; do wait "$p" 2>/dev/null || true; done
    rm -rf "$dir"
}
trap cleanup EXIT INT TERM

server_pin=""
client_pin=""
placement="not pinned, $(nproc) CPUs"
ncpu=$(nproc)
if [ "${DLOCK_BENCH_PIN:-1}" != 0 ] && [ "$ncpu" -ge 2 ] && command -v taskset >/dev/null 2>&1; then
    server_pin="taskset -c 0"
    client_pin="taskset -c 1-$((ncpu - 1))"
    placement="redis-servers on CPU 0, dlock-bench on CPU 1-$((ncpu - 1)), of $ncpu CPUs"
fi

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# start_node NAME: a cluster-enabled redis-server, its port in $port (no subshell: its pid
# must reach $pids for the cleanup)
start_node() {
    port=$(free_port)
    bus=$(free_port)
    mkdir -p "$dir/$1"
    $server_pin redis-server --port "$port" --cluster-port "$bus" --bind 127.0.0.1 --save '' \
        --appendonly no --cluster-enabled yes --cluster-config-file "$dir/$1/nodes.conf" \
        --cluster-node-timeout 1000 --dir "$dir/$1" --logfile "$dir/$1/log" </dev/null >/dev/null 2>&1 &
    pids="$pids $!"
    until redis-cli -p "$port" PING >/dev/null 2>&1; do sleep 0.05; done
}

# make_cluster PORT...: one cluster of these masters; its seed list in $seeds
make_cluster() {
    seeds=""
    for p in "$@"; do seeds="$seeds,127.0.0.1:$p"; done
    seeds=${seeds#,}
    if [ $# -eq 1 ]; then # redis-cli --cluster create wants 3 masters: give all slots by hand
        redis-cli -p "$1" CLUSTER ADDSLOTSRANGE 0 16383 >/dev/null
    else
        redis-cli --cluster create $(echo "$seeds" | tr ',' ' ') --cluster-yes >/dev/null
    fi
    for p in "$@"; do
        until redis-cli -p "$p" CLUSTER INFO | grep -q '^cluster_state:ok'; do sleep 0.1; done
    done
}

case " $parts " in *" pair "*)
    start_node one
    make_cluster "$port"
    one=$seeds ;;
esac
start_node a; a=$port
start_node b; b=$port
start_node c; c=$port
make_cluster "$a" "$b" "$c"
three=$seeds

out="$dir/out.jsonl"
: >"$out"
status=0
for round in $(seq "$rounds"); do
    for part in $parts; do
        case $part in
        pair)
            for setting in one three; do
                eval seeds=\$$setting
                $client_pin "$bench" --url "redis-cluster://$seeds" --only uncontended_pair \
                    --placement "masters=$setting round $round; $placement" >>"$out" || status=1
            done ;;
        contended)
            for which in ${BASELINE_BUILD:+baseline} this; do
                program=$bench
                [ "$which" = baseline ] && program="$BASELINE_BUILD/bench/dlock-bench"
                $client_pin "$program" --url "redis-cluster://$three" --only contended_handoff \
                    --placement "masters=three round $round; $placement" |
                    python3 -c '
import json, sys
for line in sys.stdin:
    o = json.loads(line)
    o["workload"] = "cluster_" + o["workload"]
    o.setdefault("params", {})["masters"] = 3
    if sys.argv[1] == "baseline":
        o["params"]["build"] = "baseline"
    print(json.dumps(o))' "$which" >>"$out" || status=1
            done ;;
        *) echo "cluster.sh: unknown part $part (pair, contended)" >&2; exit 2 ;;
        esac
    done
done
if [ -n "${CLUSTER_JSONL:-}" ]; then
    cat "$out" >>"$CLUSTER_JSONL"
else
    cat "$out"
fi

python3 - "$out" <<'PY' >&2
import json, sys
objs = [json.loads(line) for line in open(sys.argv[1])]
rows = {}
for o in objs:
    if o.get("workload") != "uncontended_pair":
        continue
    setting = o["placement"].split()[0]
    rows.setdefault((o["params"]["threads"], setting), []).append(o["figures"]["pairs_per_s"])
for t in sorted({t for t, _ in rows}):
    one = max(rows.get((t, "masters=one"), [0]))
    three = max(rows.get((t, "masters=three"), [0]))
    ratio = three / one if one else 0
    print(f"T={t}: 1 master {one:.0f} pairs/s, 3 masters {three:.0f} pairs/s: {ratio:.2f}x "
          f"({'met' if ratio >= 2.5 else 'missed'} the 2.5x goal)")
for o in objs:
    if o.get("workload") != "cluster_contended_handoff":
        continue
    p, f = o["params"], o["figures"]
    print(f"cluster_contended_handoff P={p['workers']} {p['mode']} {p.get('build', 'this')} build "
          f"({o['placement'].split(';')[0]}): "
          f"{f.get('sections_per_s', 0):.0f} sections/s, longest wait {f.get('wait_max_us', 0):.0f} us, "
          f"wait p99 {f.get('wait_p99_us', 0):.0f} us, min/max {f.get('fairness_min_max', 0):.2f}, "
          f"hand-offs/sections {f.get('handoff_share', 0):.2f}, errors {o.get('errors')}")
PY
exit "$status"
