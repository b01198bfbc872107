#!/bin/sh
# SPDX-License-Identifier: MIT
# sync_replicas.sh — what ?sync_replicas costs: dlock-bench's uncontended_pair (T = 1, 8, 32)
# against a master with one replica on loopback, with sync_replicas=0 (no WAIT) and auto
# (WAIT 1 after the acquire and after the release), one after the other in the same run,
# alternating ROUNDS times so that a noisy neighbour hits both alike.
#
#   bench/sync_replicas.sh [BUILD_DIR]      (default: build; QUICK=1 for 1 s per value)
#
# Prints dlock-bench's JSON lines, then one line per setting and T with the p50 of each round.
# Starts its own two redis-servers in a temp directory and stops them by pid at the end.
set -eu

build=${1:-build}
bench="$build/bench/dlock-bench"
rounds=${ROUNDS:-2}
[ -x "$bench" ] || { echo "sync_replicas.sh: no $bench (build with -DDLOCK_BUILD_BENCH=ON)" >&2; exit 2; }

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
redis-server --port "$master_port" --bind 127.0.0.1 --save '' --appendonly no \
    --unixsocket "$dir/master.sock" --dir "$dir" --logfile "$dir/master.log" &
pids="$pids $!"
redis-server --port "$replica_port" --bind 127.0.0.1 --save '' --appendonly no \
    --replicaof 127.0.0.1 "$master_port" --dir "$dir" --logfile "$dir/replica.log" &
pids="$pids $!"

# the replica acknowledges the master's writes
tries=0
until [ "$(redis-cli -s "$dir/master.sock" WAIT 1 100 2>/dev/null)" = "1" ]; do
    tries=$((tries + 1))
    [ $tries -lt 100 ] || { echo "sync_replicas.sh: the replica never synced" >&2; exit 1; }
    sleep 0.1
done

url="unix://$dir/master.sock"
out="$dir/out.jsonl"
for round in $(seq "$rounds"); do
    for setting in 0 auto; do
        "$bench" --url "$url?sync_replicas=$setting" --only uncontended_pair \
            --placement "sync_replicas=$setting round $round" | tee -a "$out"
    done
done

python3 - "$out" <<'EOF'
import json, sys
rows = {}
for line in open(sys.argv[1]):
    o = json.loads(line)
    if o.get("workload") != "uncontended_pair":
        continue
    setting = o["placement"].split()[0]
    key = (setting, o["params"]["threads"])
    rows.setdefault(key, []).append(round(o["figures"]["pair_p50_us"], 1))
for (setting, t), p50s in sorted(rows.items(), key=lambda kv: (kv[0][1], kv[0][0])):
    print(f"{setting:20s} T={t}: acquire+release p50 us per round {p50s}")
EOF
