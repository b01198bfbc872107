#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# scripts/test.sh — the whole proof, as CI runs it (`make test`, called by .ci/run).
#
# Three builds, each made once and each with a job no other build does:
#
#   build-clang/  clang, Debug, -Werror, no sanitizer: proves a second compiler takes the
#                 tree, and is what valgrind runs (valgrind cannot run sanitized programs)
#   build-asan/   gcc, Debug, -Werror, AddressSanitizer + UndefinedBehaviorSanitizer: every
#                 ctest label runs here (a plain Debug ctest beside it would repeat it)
#   build-tsan/   gcc, ThreadSanitizer: only the programs named *threads* are built and run
#
# The stages:
#
#   1. deps       scripts/deps.sh (installs missing Debian packages when root)
#   2. lint       make lint: src/core's floors, the user docs' links, the C files' format
#   3. builds     the three above, one after the other (each uses every core)
#   4. checks     side by side, because the suites mostly wait on Redis and on their own
#                 timers (alone, a ctest -j2 keeps the two cores ~20 % busy):
#                   ctest (build-asan/, every label, DLOCK_TEST_JOBS at a time)
#                   memcheck (build-clang/, the set scripts/memcheck.sh names and why)
#                   tsan (build-tsan/, the *threads* integration tests)
#                   fuzz (tests/fuzz/run.sh, 10 s per libFuzzer target)
#                 Each writes its own log; a log is printed whole when its stage fails, and
#                 its last lines when it passes.
#
# A failing stage does not stop the independent ones; stages that need a failed build are
# skipped. Ends with a summary of every stage and its time; exits non-zero if anything failed.
# Developers may skip stages: DLOCK_SKIP_MEMCHECK=1, DLOCK_SKIP_ASAN=1, DLOCK_SKIP_TSAN=1,
# DLOCK_SKIP_FUZZ=1. `make check` is the fast loop (scripts/check.sh).
# No stage retries a failed test: a test that fails once is a defect, in the test or in dlock.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$(pwd)

jobs=$(nproc 2>/dev/null || echo 2)
# The suites wait far more than they compute, so ctest runs three programs per core; the
# tests hold no wall-clock bound a busy machine can miss, so the width costs only time.
test_jobs=${DLOCK_TEST_JOBS:-$((jobs * 3))}
logs="$root/build-logs"
rm -rf "$logs"
mkdir -p "$logs"

summary=()
failures=0
started_all=$(date +%s)

record() { # NAME RC SECONDS
    if [ "$2" -eq 0 ]; then
        summary+=("PASS  $1 (${3}s)")
    else
        summary+=("FAIL  $1 (${3}s, exit $2)")
        failures=$((failures + 1))
    fi
}

# run_stage NAME COMMAND... — run a stage in the foreground with -e in force and record its
# result in $stage_ok (1 or 0). It always returns 0: calling it as an `if` condition would
# switch -e off inside the stage.
stage_ok=0
run_stage() {
    local name=$1 start rc=0
    shift
    printf '\n==================== %s ====================\n' "$name"
    start=$(date +%s)
    set +e
    (
        set -e
        "$@"
    )
    rc=$?
    set -e
    record "$name" "$rc" $(($(date +%s) - start))
    stage_ok=$((rc == 0 ? 1 : 0))
}

skip_stage() {
    printf '\n==================== %s ====================\n%s\n' "$1" "skipped: $2"
    summary+=("SKIP  $1 ($2)")
}

# Background stages: started together, each into its own log, collected in start order.
bg_names=()
bg_pids=()
bg_logs=()
start_bg() { # NAME LOGNAME COMMAND...
    local name=$1 log="$logs/$2.log"
    shift 2
    printf '\n==================== %s: started (log: %s) ====================\n' "$name" "$log"
    (
        start=$(date +%s)
        rc=0
        (
            set -e
            "$@"
        ) >"$log" 2>&1 || rc=$?
        echo "$rc $(($(date +%s) - start))" >"$log.rc"
    ) &
    bg_names+=("$name")
    bg_pids+=($!)
    bg_logs+=("$log")
}

collect_bg() {
    local i rc secs
    for i in "${!bg_pids[@]}"; do
        wait "${bg_pids[$i]}" || true
        read -r rc secs <"${bg_logs[$i]}.rc" || { rc=255; secs=0; }
        printf '\n==================== %s ====================\n' "${bg_names[$i]}"
        if [ "$rc" -eq 0 ]; then
            tail -n 15 "${bg_logs[$i]}"
        else
            cat "${bg_logs[$i]}"
        fi
        record "${bg_names[$i]}" "$rc" "$secs"
    done
}

# gcc 12's ASan/TSan runtimes cannot cope with the high-entropy ASLR of recent kernels
# (vm.mmap_rnd_bits > 28: "unexpected memory mapping"); run sanitized tests with ASLR off
# when the system lets us.
no_aslr=()
if setarch "$(uname -m)" -R true >/dev/null 2>&1; then
    no_aslr=(setarch "$(uname -m)" -R)
fi

configure() { # DIR CMAKE_ARGS...
    local dir=$1
    shift
    cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Debug -DDLOCK_WERROR=ON -DDLOCK_BUILD_TESTS=ON "$@"
}

# -gdwarf-4: clang 14 writes DWARF 5 by default, which valgrind 3.19 cannot read.
build_clang() {
    CC=clang configure build-clang -DDLOCK_SANITIZE= -DDLOCK_BUILD_EXAMPLES=ON \
        -DDLOCK_BUILD_BENCH=ON -DCMAKE_C_FLAGS=-gdwarf-4
    cmake --build build-clang -j "$jobs"
}

build_asan() {
    configure build-asan -DDLOCK_SANITIZE=address,undefined -DDLOCK_BUILD_EXAMPLES=ON \
        -DDLOCK_BUILD_BENCH=OFF
    cmake --build build-asan -j "$jobs"
}

# Only the programs TSan runs: the integration tests named *threads*.
tsan_targets() {
    local f
    for f in tests/integration/test_*threads*.c; do
        f=${f##*/test_}
        echo "integration_${f%.c}"
    done
}

build_tsan() {
    configure build-tsan -DDLOCK_SANITIZE=thread -DDLOCK_BUILD_EXAMPLES=OFF \
        -DDLOCK_BUILD_BENCH=OFF -DDLOCK_BUILD_TOOLS=OFF
    # shellcheck disable=SC2046 # one target per word
    cmake --build build-tsan -j "$jobs" --target $(tsan_targets)
}

ctest_asan() {
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
        UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        "${no_aslr[@]}" ctest --test-dir build-asan --output-on-failure -j "$test_jobs"
}

ctest_tsan() {
    TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
        "${no_aslr[@]}" ctest --test-dir build-tsan --output-on-failure -j "$jobs" \
        -L integration -R threads --no-tests=ignore
}

# 1. dependencies: nothing else can work without them.
run_stage "deps" scripts/deps.sh
if [ "$stage_ok" -ne 1 ]; then
    printf '\n==================== summary ====================\n'
    printf '%s\n' "${summary[@]}"
    exit 1
fi

# 2. Static checks: src/core's floors, the user docs' links, the C files' format.
run_stage "lint (layers, docs, format)" make --no-print-directory lint

# 3. The builds.
clang_ok=0
if command -v clang >/dev/null 2>&1; then
    run_stage "build (build-clang/, clang, Debug, -Werror)" build_clang
    clang_ok=$stage_ok
else
    skip_stage "build (build-clang/)" "clang not installed"
fi
asan_ok=0
if [ "${DLOCK_SKIP_ASAN:-0}" = 1 ]; then
    skip_stage "asan+ubsan" "DLOCK_SKIP_ASAN=1"
else
    run_stage "build (build-asan/, gcc, address,undefined, -Werror)" build_asan
    asan_ok=$stage_ok
fi
tsan_ok=0
if [ "${DLOCK_SKIP_TSAN:-0}" = 1 ]; then
    skip_stage "tsan" "DLOCK_SKIP_TSAN=1"
else
    run_stage "build (build-tsan/, gcc, thread: the *threads* tests)" build_tsan
    tsan_ok=$stage_ok
fi

# 4. The checks, side by side.
if [ "$asan_ok" -eq 1 ]; then
    start_bg "ctest (build-asan/, every label, -j$test_jobs)" ctest-asan ctest_asan
elif [ "${DLOCK_SKIP_ASAN:-0}" != 1 ]; then
    skip_stage "ctest (build-asan/)" "build failed"
fi
if [ "${DLOCK_SKIP_MEMCHECK:-0}" = 1 ]; then
    skip_stage "memcheck" "DLOCK_SKIP_MEMCHECK=1"
elif [ "$clang_ok" -eq 1 ]; then
    start_bg "memcheck (valgrind, build-clang/)" memcheck scripts/memcheck.sh build-clang
else
    skip_stage "memcheck" "no build-clang/"
fi
if [ "$tsan_ok" -eq 1 ]; then
    start_bg "ctest (build-tsan/, -L integration -R threads)" ctest-tsan ctest_tsan
elif [ "${DLOCK_SKIP_TSAN:-0}" != 1 ]; then
    skip_stage "ctest (build-tsan/)" "build failed"
fi
if [ "${DLOCK_SKIP_FUZZ:-0}" = 1 ]; then
    skip_stage "fuzz (short)" "DLOCK_SKIP_FUZZ=1"
elif fuzz_missing=$(tests/fuzz/run.sh --available); then
    start_bg "fuzz (short, 10 s per target)" fuzz env FUZZ_SECONDS=10 tests/fuzz/run.sh
else
    skip_stage "fuzz (short)" "$fuzz_missing"
fi
collect_bg

printf '\n==================== summary ====================\n'
printf '%s\n' "${summary[@]}"
echo "total: $(($(date +%s) - started_all))s (logs: $logs/)"
if [ "$failures" -ne 0 ]; then
    echo "FAILED: $failures stage(s)"
    exit 1
fi
echo "all stages passed"
