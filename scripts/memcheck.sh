#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# scripts/memcheck.sh [BUILD_DIR] — run test programs under valgrind's memcheck.
#
# What valgrind is here for: the one class of defect the ASan+UBSan run of every test cannot
# see, a read of uninitialised memory (a field a constructor forgot, a reply buffer read past
# what was filled, a struct copied before it was set), plus a second, independent leak check.
# ASan sees every other memory error in every test; valgrind costs 20-50x the time, so it runs
# the set below, chosen to reach every place dlock fills memory from outside or builds it field
# by field (DLOCK_MEMCHECK_ALL=1 runs every unit and integration program instead):
#
#   unit_*                     every parser and builder without Redis: URLs, options, replies,
#                              owner ids, the scheduler (cheap: all of them)
#   integration_client         client options and lifetime, ping, errors
#   integration_client_stats   the stats struct (filled field by field on the loop thread)
#   integration_lock           the reentrant/fenced lock, blocking face: every script reply
#   integration_lock_async     the async face: callbacks, owners, ops on the caller's loop
#   integration_lock_handoff   the hand-off queue and promise replies
#   integration_fairlock       the fair lock's queue replies
#   integration_rwlock         the read-write lock's replies
#   integration_semaphore      semaphore replies and counts
#   integration_permits        permit ids (hex built from random bytes) and leases
#   integration_latch          latch counts
#   integration_spinlock       the spin lock's backoff
#   integration_multilock      composites: members' answers gathered into one result
#   integration_redlock_async  quorum and validity across independent clients (the async
#                              face: the blocking one is the same engine behind submit, and
#                              takes six times as long under valgrind)
#   integration_wait           the waiting engine's messages and timers
#   integration_pubsub         the subscriber connection's pushes
#   integration_watchdog       the renewal batches and lost-lease reports
#   integration_malformed_replies  every reply shape a server can send, bad ones included
#   integration_handle_free    frees racing in-flight replies
#   integration_tls            OpenSSL's buffers on our sockets
#   integration_cluster        the slot map, MOVED/ASK
#   integration_sentinel       sentinel replies and the master switch
#
# BUILD_DIR defaults to build. Any error, or any definitely or indirectly lost byte, fails a
# program (exit 99). At most two run at a time (DLOCK_MEMCHECK_JOBS). Tests shrink their
# iteration counts with DLOCK_TEST_SCALE (0.05 here unless set). Each program gets
# DLOCK_MEMCHECK_TIMEOUT seconds (default 900). Logs: BUILD_DIR/memcheck/<program>.log.
# Suppressions: tests/valgrind.supp (each one named and commented). DLOCK_MEMCHECK_FILTER, an
# extended regex, narrows the set to the programs whose name matches (e.g. '^integration_redlock').
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

# The set the header explains; a name listed here that the build lacks is an error, so that
# a renamed test cannot silently leave the set.
chosen=(client client_stats lock lock_async lock_handoff fairlock rwlock semaphore permits latch
    spinlock multilock redlock_async wait pubsub watchdog malformed_replies handle_free tls cluster
    sentinel)

in_set() { # PROGRAM-NAME
    local n
    [[ "$1" == unit_* ]] && return 0
    [ "${DLOCK_MEMCHECK_ALL:-0}" = 1 ] && return 0
    for n in "${chosen[@]}"; do
        [ "$1" = "integration_$n" ] && return 0
    done
    return 1
}

if [ "${DLOCK_MEMCHECK_ALL:-0}" != 1 ]; then
    for n in "${chosen[@]}"; do
        if [ ! -x "$build/tests/bin/integration/integration_$n" ]; then
            echo "memcheck.sh: integration_$n is in the set but not in $build: update the set" >&2
            exit 2
        fi
    done
fi

programs=()
for layer in unit integration; do
    [ -d "$build/tests/bin/$layer" ] || continue
    while IFS= read -r p; do
        name=$(basename "$p")
        in_set "$name" || continue
        if [ -z "${DLOCK_MEMCHECK_FILTER:-}" ] || [[ "$name" =~ $DLOCK_MEMCHECK_FILTER ]]; then
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
