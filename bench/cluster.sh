#!/bin/sh
# SPDX-License-Identifier: MIT
# cluster.sh — lock pair throughput on a Redis Cluster of 1 master against one of 3 masters:
# dlock-bench's uncontended_pair (T threads on one client, a lock name of their own each,
# the names spread over the slots) through redis-cluster://, alternating the two clusters
# ROUNDS times in one run so that a noisy neighbour hits both alike.
#
#   bench/cluster.sh [BUILD_DIR]     (default: build; QUICK=1 for 1 s per value)
#
# The goal is at least 2.5x the pairs/s with 3 masters. The clusters have no replicas (a
# replica only adds the replication stream's load to the same cores). Prints dlock-bench's
# JSON lines, then pairs/s per cluster and T, and the ratio. Starts its own redis-servers in
# a temp directory and stops them by pid at the end.
set -eu

build=${1:-build}
bench="$build/bench/dlock-bench"
rounds=${ROUNDS:-2}
[ -x "$bench" ] || { echo "cluster.sh: no $bench (build with -DDLOCK_BUILD_BENCH=ON)" >&2; exit 2; }

dir=$(mktemp -d /tmp/dlock-cluster-bench-XXXXXX)
pids=""
cleanup() {
    for p in $pids; do kill "$p" 2>/dev/null || true; done
    for p in $pids; do wait "$p" 2>/dev/null || true; done
    rm -rf "$dir"
}
trap cleanup EXIT INT TERM

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# start_node NAME: a cluster-enabled redis-server, its port in $port (no subshell: its pid
# must reach $pids for the cleanup)
start_node() {
    port=$(free_port)
    bus=$(free_port)
    mkdir -p "$dir/$1"
    redis-server --port "$port" --cluster-port "$bus" --bind 127.0.0.1 --save '' \
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

start_node one
make_cluster "$port"
one=$seeds
start_node a; a=$port
start_node b; b=$port
start_node c; c=$port
make_cluster "$a" "$b" "$c"
three=$seeds

out="$dir/out.jsonl"
for round in $(seq "$rounds"); do
    for setting in one three; do
        eval seeds=\$$setting
        "$bench" --url "redis-cluster://$seeds" --only uncontended_pair \
            --placement "masters=$setting round $round" | tee -a "$out"
    done
done

python3 - "$out" <<'PY'
import json, sys
rows = {}
for line in open(sys.argv[1]):
    o = json.loads(line)
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
PY
