#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# scripts/memcheck.sh [BUILD_DIR] — run the unit and integration programs under valgrind.
#
# Every executable in BUILD_DIR/tests/bin/unit and BUILD_DIR/tests/bin/integration (default
# BUILD_DIR: build) runs under memcheck: any error, or any definitely or indirectly lost
# byte, fails it (exit 99). At most two run at a time (DLOCK_MEMCHECK_JOBS). Tests shrink
# their iteration counts with DLOCK_TEST_SCALE (0.05 here unless set). Each program gets
# DLOCK_MEMCHECK_TIMEOUT seconds (default 900). Logs: BUILD_DIR/memcheck/<program>.log.
# Suppressions: tests/valgrind.supp (each one named and commented). DLOCK_MEMCHECK_FILTER, an
# extended regex, keeps only the programs whose name matches (e.g. '^integration_redlock').
# A program runs once: no failure is retried.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-build}
if [ ! -d "$build" ]; then
    echo "memcheck.sh: no build directory '$build'" >&2
    exit 2
fi
build=$(cd "$build" && pwd)

jobs_max=${DLOCK_MEMCHECK_JOBS:-2}
timeout_s=${DLOCK_MEMCHECK_TIMEOUT:-900}
export DLOCK_TEST_SCALE=${DLOCK_TEST_SCALE:-0.05}
export DLOCK_SOURCE_DIR=$root

command -v valgrind >/dev/null 2>&1 || {
    echo "memcheck.sh: valgrind not found (apt-get install valgrind)" >&2
    exit 2
}

programs=()
for layer in unit integration; do
    [ -d "$build/tests/bin/$layer" ] || continue
    while IFS= read -r p; do
        if [ -z "${DLOCK_MEMCHECK_FILTER:-}" ] || [[ "$(basename "$p")" =~ $DLOCK_MEMCHECK_FILTER ]]; then
            programs+=("$p")
        fi
    done < <(find "$build/tests/bin/$layer" -maxdepth 1 -type f -perm -u+x | sort)
done

if [ "${#programs[@]}" -eq 0 ]; then
    echo "memcheck.sh: no test programs in $build/tests/bin/{unit,integration}: nothing to check"
    exit 0
fi

logs="$build/memcheck"
rm -rf "$logs"
mkdir -p "$logs"

run_one() {
    local prog=$1 name log start rc
    name=$(basename "$prog")
    log="$logs/$name.log"
    start=$(date +%s)
    # Run once: a failure, of a test or of memcheck, is never retried.
    rc=0
    (
        cd "$build/tests"
        timeout --kill-after=30 "$timeout_s" \
            valgrind --tool=memcheck --error-exitcode=99 --leak-check=full \
            --show-leak-kinds=definite,indirect --errors-for-leak-kinds=definite,indirect \
            --track-origins=no --suppressions="$root/tests/valgrind.supp" \
            "$prog"
    ) >"$log" 2>&1 || rc=$?
    echo "$rc $(($(date +%s) - start))" >"$log.rc"
}

echo "memcheck: ${#programs[@]} program(s), $jobs_max at a time, DLOCK_TEST_SCALE=$DLOCK_TEST_SCALE"
for prog in "${programs[@]}"; do
    while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do
        wait -n || true
    done
    echo "  start $(basename "$prog")"
    run_one "$prog" &
done
wait || true

failed=()
for prog in "${programs[@]}"; do
    name=$(basename "$prog")
    read -r rc secs <"$logs/$name.log.rc" || { rc=255; secs=0; }
    case "$rc" in
    0) echo "PASS  $name (${secs}s)" ;;
    99) why="valgrind found errors or leaks" ;;
    124 | 137) why="timed out after ${timeout_s}s" ;;
    *) why="exit status $rc" ;;
    esac
    if [ "$rc" != 0 ]; then
        echo "FAIL  $name (${secs}s): $why; log: $logs/$name.log"
        failed+=("$name")
    fi
done

for name in "${failed[@]+"${failed[@]}"}"; do
    echo
    echo "---- $name: last 80 lines of $logs/$name.log ----"
    tail -n 80 "$logs/$name.log"
done

echo
if [ "${#failed[@]}" -ne 0 ]; then
    echo "memcheck: ${#failed[@]} of ${#programs[@]} failed: ${failed[*]}"
    exit 1
fi
echo "memcheck: all ${#programs[@]} passed"
