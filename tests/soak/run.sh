#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/soak/run.sh - `make soak`: builds dlock_soak, runs it, draws its samples.
#
#   tests/soak/run.sh                  SOAK_S seconds (default 600) with every fault
#   SOAK_S=3600 tests/soak/run.sh      an hour
#
# Builds in $SOAK_BUILD_DIR (default build-soak/, RelWithDebInfo, no sanitizers: a soak
# measures RSS and rates, which sanitizers distort), writes samples.csv, faults.csv,
# lost.csv, soak.txt (the table) and soak.png into $SOAK_OUT (default
# build-soak/soak-<UTC time>/), and exits with the soak's status: 0 when nothing grew,
# overlapped or was lost without a fault, 1 otherwise, 2 when it could not run.
# Every SOAK_* variable of docs/soak.md passes through to the soak.
#
# Needs: cmake, a C compiler and dlock's build dependencies (make deps), redis-server;
# redis-sentinel and redis-cli for the Sentinel and Cluster parts (left out, saying so,
# without them); python3 for the picture (standard library only).
set -eu

root=$(cd "$(dirname "$0")/../.." && pwd)
build=${SOAK_BUILD_DIR:-$root/build-soak}
out=${SOAK_OUT:-$build/soak-$(date -u +%Y%m%dT%H%M%SZ)}

missing=""
for tool in cmake redis-server; do
    command -v "$tool" >/dev/null 2>&1 || missing="$missing $tool"
done
if [ -n "$missing" ]; then
    echo "soak: needs$missing (make deps installs dlock's dependencies; redis-server: apt-get install redis-server)" >&2
    exit 2
fi
for tool in redis-sentinel redis-cli; do
    command -v "$tool" >/dev/null 2>&1 ||
        echo "soak: no $tool: the Sentinel and Cluster parts will be left out" >&2
done

cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDLOCK_BUILD_TESTS=ON \
    -DDLOCK_BUILD_EXAMPLES=OFF >/dev/null
cmake --build "$build" --target dlock_soak -j "$(nproc 2>/dev/null || echo 2)" >/dev/null

mkdir -p "$out"
echo "soak: writing to $out"
# The soak's own status, not tee's: sh has no pipefail.
{
    status=0
    SOAK_OUT="$out" "$build/tests/bin/soak/dlock_soak" || status=$?
    echo "$status" >"$out/status"
} | tee "$out/soak.txt"
status=$(cat "$out/status")
rm -f "$out/status"

if command -v python3 >/dev/null 2>&1; then
    python3 "$root/tests/soak/plot.py" "$out" "$out/soak.png" || true
else
    echo "soak: no python3: no picture (the samples are in $out/samples.csv)" >&2
fi
exit "$status"
