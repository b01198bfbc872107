#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/fuzz/run.sh — build the libFuzzer targets (build-fuzz/, clang) and run each for
# FUZZ_SECONDS (default 60) from a scratch copy of its seed corpus (tests/fuzz/corpus/<target>
# is left as it is; new inputs stay in build-fuzz/corpus/). A crash, a leak, UB or a timeout
# fails the run; its input is kept in build-fuzz/artifacts/.
#
#   tests/fuzz/run.sh              build and run every target (make fuzz)
#   tests/fuzz/run.sh --available  exit 0 when clang's libFuzzer links here, else 1 and why
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
build=${FUZZ_BUILD_DIR:-build-fuzz}
seconds=${FUZZ_SECONDS:-60}
targets=(fuzz_url fuzz_reply_shape)

libfuzzer_links() {
    local dir
    dir=$(mktemp -d)
    printf '%s\n' '#include <stddef.h>' '#include <stdint.h>' \
        'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }' \
        >"$dir/probe.c"
    local ok=0
    command -v clang >/dev/null 2>&1 &&
        clang -fsanitize=fuzzer,address,undefined "$dir/probe.c" -o "$dir/probe" 2>/dev/null || ok=1
    rm -rf "$dir"
    return $ok
}

if [ "${1:-}" = --available ]; then
    if libfuzzer_links; then
        exit 0
    fi
    echo "clang's libFuzzer is missing: clang -fsanitize=fuzzer does not link (apt-get install clang)"
    exit 1
fi
if ! libfuzzer_links; then
    echo "fuzz: skipped: clang's libFuzzer is missing (clang -fsanitize=fuzzer does not link)"
    exit 0
fi

CC=clang cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Debug -DDLOCK_WERROR=ON -DDLOCK_BUILD_FUZZ=ON \
    -DDLOCK_BUILD_TESTS=OFF -DDLOCK_BUILD_EXAMPLES=OFF -DDLOCK_BUILD_TOOLS=OFF \
    -DDLOCK_BUILD_BENCH=OFF -DDLOCK_SANITIZE= >/dev/null
cmake --build "$build" -j "$(nproc 2>/dev/null || echo 2)" --target "${targets[@]}"

mkdir -p "$build/artifacts"
for t in "${targets[@]}"; do
    corpus="$build/corpus/$t"
    mkdir -p "$corpus"
    cp -n tests/fuzz/corpus/"$t"/* "$corpus"/
    echo "== $t: ${seconds} s"
    log="$build/$t.log"
    rc=0
    # detect_leaks: a reply or an endpoint never freed is a failure too
    ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
        "$build/tests/fuzz/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
        -artifact_prefix="$build/artifacts/$t-" -print_final_stats=1 "$corpus" >"$log" 2>&1 ||
        rc=$?
    grep -E '^(#[0-9]+[[:space:]]+DONE|stat::number_of_executed_units)' "$log" || true
    if [ "$rc" -ne 0 ]; then
        tail -n 40 "$log"
        echo "$t FAILED (exit $rc); the input is in $build/artifacts/"
        exit 1
    fi
done
