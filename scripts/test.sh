#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# scripts/test.sh — the whole proof, as CI runs it (`make test`, called by .ci/run).
#
#   1. deps       scripts/deps.sh (installs missing Debian packages when root)
#   2. lint       make lint: src/core's layers, the user docs' links, the C files' format
#   3. clang      build-clang/ (clang, -Werror): the tree builds with a second compiler
#   4. build      build/ (Debug, -Werror)
#   5. ctest      every label: unit, integration, fault, stress, examples, interop
#   6. memcheck   scripts/memcheck.sh build (unit + integration under valgrind)
#   7. asan       build-asan/ (address,undefined), every label
#   8. tsan       build-tsan/ (thread), the integration tests named *threads*
#   9. fuzz       tests/fuzz/run.sh, 10 s per libFuzzer target (skipped without clang's
#                 libFuzzer); `make fuzz` runs them longer
#
# A failing stage does not stop the independent ones; stages that need a failed build are
# skipped. Ends with a summary; exits non-zero if anything failed.
# Developers may skip stages: DLOCK_SKIP_MEMCHECK=1, DLOCK_SKIP_ASAN=1, DLOCK_SKIP_TSAN=1.
# No stage retries a failed test: a test that fails once is a defect, in the test or in dlock.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

jobs=$(nproc 2>/dev/null || echo 2)
summary=()
failures=0

# run_stage NAME COMMAND... — run a stage with -e in force, record its result in
# $stage_ok (1 or 0). It always returns 0: calling it as an `if` condition would switch
# -e off inside the stage.
stage_ok=0
run_stage() {
    local name=$1 start rc=0 secs
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
    secs=$(($(date +%s) - start))
    if [ "$rc" -eq 0 ]; then
        summary+=("PASS  $name (${secs}s)")
        stage_ok=1
    else
        summary+=("FAIL  $name (${secs}s, exit $rc)")
        failures=$((failures + 1))
        stage_ok=0
    fi
}

skip_stage() {
    printf '\n==================== %s ====================\n%s\n' "$1" "skipped: $2"
    summary+=("SKIP  $1 ($2)")
}

# gcc 12's ASan/TSan runtimes cannot cope with the high-entropy ASLR of recent kernels
# (vm.mmap_rnd_bits > 28: "unexpected memory mapping"); run sanitized tests with ASLR off
# when the system lets us.
no_aslr=()
if setarch "$(uname -m)" -R true >/dev/null 2>&1; then
    no_aslr=(setarch "$(uname -m)" -R)
fi

configure_and_build() { # DIR CMAKE_ARGS...
    local dir=$1
    shift
    cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Debug -DDLOCK_WERROR=ON \
        -DDLOCK_BUILD_TESTS=ON -DDLOCK_BUILD_EXAMPLES=ON "$@"
    cmake --build "$dir" -j "$jobs"
}

build_with_clang() {
    CC=clang configure_and_build build-clang -DDLOCK_SANITIZE=
}

ctest_asan() {
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
        UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        "${no_aslr[@]}" ctest --test-dir build-asan --output-on-failure -j2
}

ctest_tsan() {
    TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
        "${no_aslr[@]}" ctest --test-dir build-tsan --output-on-failure -j2 \
        -L integration -R threads --no-tests=ignore
}

# 1. dependencies: nothing else can work without them.
run_stage "deps" scripts/deps.sh
if [ "$stage_ok" -ne 1 ]; then
    printf '\n==================== summary ====================\n'
    printf '%s\n' "${summary[@]}"
    exit 1
fi

# 2. Static checks: src/core's layers, the user docs' links, the C files' format.
run_stage "lint (layers, docs)" make --no-print-directory lint

# 3. The same tree with clang, warnings as errors (gcc alone let C11 slips through).
if command -v clang >/dev/null 2>&1; then
    run_stage "build (build-clang/, clang, -Werror)" build_with_clang
else
    skip_stage "build (build-clang/)" "clang not installed"
fi

# 4-6. Debug build, every ctest label, valgrind.
run_stage "build (build/, Debug, -Werror)" configure_and_build build -DDLOCK_SANITIZE=
if [ "$stage_ok" -eq 1 ]; then
    run_stage "ctest (build/, all labels)" ctest --test-dir build --output-on-failure -j2
    if [ "${DLOCK_SKIP_MEMCHECK:-0}" = 1 ]; then
        skip_stage "memcheck" "DLOCK_SKIP_MEMCHECK=1"
    else
        run_stage "memcheck (valgrind: unit + integration)" scripts/memcheck.sh build
    fi
else
    skip_stage "ctest (build/, all labels)" "build failed"
    skip_stage "memcheck" "build failed"
fi

# 7. AddressSanitizer + UndefinedBehaviorSanitizer, every label.
if [ "${DLOCK_SKIP_ASAN:-0}" = 1 ]; then
    skip_stage "asan+ubsan" "DLOCK_SKIP_ASAN=1"
else
    run_stage "build (build-asan/, address,undefined)" \
        configure_and_build build-asan -DDLOCK_SANITIZE=address,undefined
    if [ "$stage_ok" -eq 1 ]; then
        run_stage "ctest (build-asan/, all labels)" ctest_asan
    else
        skip_stage "ctest (build-asan/, all labels)" "build failed"
    fi
fi

# 8. ThreadSanitizer, the many-threads integration tests.
if [ "${DLOCK_SKIP_TSAN:-0}" = 1 ]; then
    skip_stage "tsan" "DLOCK_SKIP_TSAN=1"
else
    run_stage "build (build-tsan/, thread)" configure_and_build build-tsan -DDLOCK_SANITIZE=thread
    if [ "$stage_ok" -eq 1 ]; then
        run_stage "ctest (build-tsan/, -L integration -R threads)" ctest_tsan
    else
        skip_stage "ctest (build-tsan/, -L integration -R threads)" "build failed"
    fi
fi

# 9. A short run of each fuzz target (URL parser, script-reply shapes).
if fuzz_missing=$(tests/fuzz/run.sh --available); then
    run_stage "fuzz (short, 10 s per target)" env FUZZ_SECONDS=10 tests/fuzz/run.sh
else
    skip_stage "fuzz (short)" "$fuzz_missing"
fi

printf '\n==================== summary ====================\n'
printf '%s\n' "${summary[@]}"
if [ "$failures" -ne 0 ]; then
    echo "FAILED: $failures stage(s)"
    exit 1
fi
echo "all stages passed"
