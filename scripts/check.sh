#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# scripts/check.sh — the contributor's fast loop (`make check`): one Debug build (build/,
# -Werror, no sanitizer) and the unit and integration tests, several at a time. It proves
# less than `make test` (no second compiler, no sanitizers, no valgrind, no fault, stress,
# example or interop label, nor the selftests of the test support code) and runs in under
# four minutes on two cores, also beside a `make test`; run `make test` before you push.
#
# Extra arguments go to ctest: `make check ARGS='-R lock'` runs only the tests matching "lock".
# DLOCK_TEST_JOBS sets how many tests run at once (default: three per core: they mostly wait).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
jobs=$(nproc 2>/dev/null || echo 2)
test_jobs=${DLOCK_TEST_JOBS:-$((jobs * 3))}

cmake -S . -B build -DCMAKE_BUILD_TYPE=Debug -DDLOCK_WERROR=ON -DDLOCK_BUILD_TESTS=ON \
    -DDLOCK_BUILD_EXAMPLES=OFF -DDLOCK_BUILD_BENCH=OFF -DDLOCK_SANITIZE=
cmake --build build -j "$jobs"
# shellcheck disable=SC2086 # ARGS is a list of ctest arguments
ctest --test-dir build --output-on-failure -j "$test_jobs" -L 'unit|integration' -LE support \
    ${ARGS:-}
