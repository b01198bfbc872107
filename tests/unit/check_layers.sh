#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/unit/check_layers.sh SOURCE_DIR — ctest unit_check_layers: the layer lint
# (scripts/check-layers.py, part of make lint and so of make test) passes on the tree as it
# is and fails, naming the fault, on each way of breaking the floors of src/core: a
# primitive, the tool or an example that includes a floor's header, a floor that includes or
# calls one above it, a door that includes a floor, a circle of calls, a file on no floor.
# Each case breaks a scratch copy of the tree in one place.
set -euo pipefail

source_dir=$1
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
failures=0

fresh() {
    rm -rf "$scratch/tree"
    mkdir -p "$scratch/tree/scripts"
    cp -r "$source_dir/src" "$source_dir/tools" "$source_dir/examples" "$source_dir/bench" \
        "$scratch/tree/"
    cp "$source_dir/scripts/check-layers.py" "$scratch/tree/scripts/"
}

lint() { python3 "$scratch/tree/scripts/check-layers.py" "$scratch/tree" 2>&1; }

# expect_fail WHAT WORDS — the lint of the broken tree fails and says WORDS.
expect_fail() {
    local what=$1 words=$2 out
    if out=$(lint); then
        echo "FAIL: $what: the lint passed"
        failures=$((failures + 1))
    elif ! grep -qF -- "$words" <<<"$out"; then
        echo "FAIL: $what: the lint failed without saying '$words':"
        grep 'check-layers:' <<<"$out" || true
        failures=$((failures + 1))
    else
        echo "ok: $what: $(grep -F -- "$words" <<<"$out" | head -1)"
    fi
}

fresh
if out=$(lint); then
    echo "ok: the tree as it is: $(tail -1 <<<"$out")"
else
    echo "FAIL: the tree as it is: $out"
    failures=$((failures + 1))
fi

fresh
echo '#include "topology/cluster.h"' >>"$scratch/tree/src/lock/ordinary.c"
expect_fail "a primitive includes a topology header" \
    "src/lock/ordinary.c includes topology/cluster.h, a core-only header"

fresh
echo '#include "net/net.h"' >>"$scratch/tree/tools/dlock.c"
expect_fail "the tool includes a floor's header" "tools/dlock.c includes net/net.h"

fresh
printf 'int dlock__cluster_url_parse(const char *url, void *out, char *err, unsigned long n);\n' \
    >>"$scratch/tree/tools/cli.h"
expect_fail "the tool declares a core function itself" \
    "tools/cli.h declares the core's dlock__cluster_url_parse itself"

fresh
echo '#include "engine/engine.h"' >>"$scratch/tree/src/core/net/conn.c"
expect_fail "net includes the engine's header" \
    "src/core/net/conn.c (net) includes engine/engine.h (engine), a floor above it"

fresh
printf 'static void up(dlock_client *c) { dlock__renew_now(c); }\n' \
    >>"$scratch/tree/src/core/net/link.c"
expect_fail "net calls the watchdog" "net/link.c calls up into engine/renew.c: dlock__renew_now"

fresh
echo '#include "topology/topology.h"' >>"$scratch/tree/src/core/include/dlock_object.h"
expect_fail "a door includes a floor" "(a door) includes topology/topology.h"

fresh
printf 'void dlock__circle_a(void) { dlock__log(0, 0, "x"); }\n' >>"$scratch/tree/src/core/base/alloc.c"
printf 'void dlock__circle_b(void) { dlock__circle_a(); }\n' >>"$scratch/tree/src/core/base/log.c"
expect_fail "two files of one floor call each other" "a circle of calls:"

fresh
cp "$scratch/tree/src/core/net/reply.c" "$scratch/tree/src/core/reply2.c"
expect_fail "a .c file at the top of src/core" "src/core/reply2.c is on no floor"

fresh
mkdir "$scratch/tree/src/core/misc"
cp "$scratch/tree/src/core/net/reply.c" "$scratch/tree/src/core/misc/reply2.c"
expect_fail "a folder that is no floor" "src/core/misc/ is no floor"

if [ "$failures" -ne 0 ]; then
    echo "$failures case(s) failed"
    exit 1
fi
echo "all cases passed"
