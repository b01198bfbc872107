#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/unit/embed_lua_tags.sh CMAKE SOURCE_DIR — ctest unit_embed_lua_tags: the build reads
# what each KEYS[i] of a script is from its header's tag ([stored] / [unstored]) and stops on a
# missing or misspelt one (cmake/embed_lua.cmake). Each case embeds one crafted script from a
# scratch source tree and checks the generated mask, or that the build stopped naming the line.
set -euo pipefail

cmake_bin=$1
source_dir=$2
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
failures=0

# embed HEADER... — embeds src/x/s.lua made of the header lines and one line of code; prints
# cmake's output; returns cmake's status.
embed() {
    rm -rf "$scratch/tree" "$scratch/out"
    mkdir -p "$scratch/tree/src/x" "$scratch/tree/src/core/lua" "$scratch/out"
    { printf '%s\n' "$@"; printf 'return 1\n'; } >"$scratch/tree/src/x/s.lua"
    echo "src/x/s.lua" >"$scratch/list"
    "$cmake_bin" -DDLOCK_SOURCE_DIR="$scratch/tree" -DDLOCK_OUTPUT_DIR="$scratch/out" \
        -DDLOCK_SCRIPT_LIST="$scratch/list" -P "$source_dir/cmake/embed_lua.cmake" 2>&1
}

expect_mask() { # WANT HEADER...
    local want=$1 out
    shift
    if ! out=$(embed "$@"); then
        echo "FAIL: the build stopped on a good header: $out"
        failures=$((failures + 1))
    elif ! grep -q "{\"x/s\", script_x_s, [0-9]*, ${want}u}" "$scratch/out/dlock_scripts.c"; then
        echo "FAIL: expected mask $want, got: $(grep '"x/s"' "$scratch/out/dlock_scripts.c")"
        failures=$((failures + 1))
    else
        echo "ok: mask $want"
    fi
}

expect_stop() { # WHY HEADER...
    local why=$1 out
    shift
    if out=$(embed "$@"); then
        echo "FAIL: the build went on with $why"
        failures=$((failures + 1))
    elif ! grep -q "src/x/s.lua" <<<"$out"; then
        echo "FAIL: the build stopped on $why without naming the script: $out"
        failures=$((failures + 1))
    else
        echo "ok: stops on $why"
    fi
}

expect_mask 0x0 '-- KEYS[1]  [stored] the lock hash'
expect_mask 0x4 '-- KEYS[1]  [stored] the lock hash' '-- KEYS[2]  [unstored] its channel' \
    '--          (a second line of its description)'
expect_mask 0x28 '-- KEYS[1]  [stored] a' '-- KEYS[3]  [unstored] b' '-- KEYS[5]  [unstored] c'
expect_mask 0x0 '-- KEYS[1..n]  [stored] the lock hashes'
expect_stop "a declaration without a tag" '-- KEYS[1]  the lock hash'
expect_stop "a misspelt tag" '-- KEYS[1]  [stored] a' '-- KEYS[2]  [unstore] its channel'
expect_stop "a tag in capitals" '-- KEYS[1]  [Stored] a'
expect_stop "an index declared twice" '-- KEYS[1]  [stored] a' '-- KEYS[1]  [unstored] b'
expect_stop "an index past 31" '-- KEYS[32]  [unstored] a'
expect_stop "a batch tagged unstored" '-- KEYS[1..n]  [unstored] a'
expect_stop "no declaration at all" '-- a script that names no key'

if [ "$failures" -ne 0 ]; then
    echo "$failures case(s) failed"
    exit 1
fi
