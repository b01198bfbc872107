#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/unit/embed_lua_tags.sh CMAKE SOURCE_DIR — ctest unit_embed_lua_tags: the build reads
# what each KEYS[i] of a script is from its header's tag ([stored] / [unstored]) and stops on a
# missing or misspelt one, and reads the commands each script calls, stopping on a misspelt
# one or one not written out (cmake/embed_lua.cmake). Each case embeds one crafted script from
# a scratch source tree and checks the generated mask or command list, or that the build
# stopped naming the script.
set -euo pipefail

cmake_bin=$1
source_dir=$2
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
failures=0

# embed HEADER... — embeds src/x/s.lua made of the header lines and the code in $code
# (default: one line that calls Redis); prints cmake's output; returns cmake's status.
code="return redis.call('get', KEYS[1])"
embed() {
    rm -rf "$scratch/tree" "$scratch/out"
    mkdir -p "$scratch/tree/src/x" "$scratch/tree/src/core/lua" "$scratch/out"
    { printf '%s\n' "$@"; printf '%s\n' "$code"; } >"$scratch/tree/src/x/s.lua"
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
    elif ! grep -q "{\"x/s\", script_x_s, [0-9]*, ${want}u, " "$scratch/out/dlock_scripts.c"; then
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

expect_commands() { # WANT (the C list) — embeds $code under a good header
    local want=$1 out
    if ! out=$(embed '-- KEYS[1]  [stored] a'); then
        echo "FAIL: the build stopped on good code: $out"
        failures=$((failures + 1))
    elif ! grep -qF "script_x_s_commands[] = {${want}NULL};" "$scratch/out/dlock_scripts.c"; then
        echo "FAIL: expected commands {${want}NULL}, got: $(grep '_commands\[\]' "$scratch/out/dlock_scripts.c")"
        failures=$((failures + 1))
    else
        echo "ok: commands {${want}NULL}"
    fi
}

code="return redis.call('get', KEYS[1])"
expect_commands '"get", '
code="redis.call('SET', KEYS[1], 1) redis.pcall( 'hget' , KEYS[1], 'f') return redis.call('get', KEYS[1])"
expect_commands '"get", "hget", "set", '
code=$(printf '%s\n' 'local function side(...)' '    return redis.pcall(...)' 'end' \
    "side('zrange', KEYS[1], 0, 0) return side('del', KEYS[1])")
expect_commands '"del", "zrange", '
code="return redis.call('hgte', KEYS[1], 'f')"
expect_stop "a misspelt command" '-- KEYS[1]  [stored] a'
code="return redis.call('subscribe', KEYS[1])"
expect_stop "a command no script may run" '-- KEYS[1]  [stored] a'
code="local cmd = 'get' return redis.call(cmd, KEYS[1])"
expect_stop "a command not written out" '-- KEYS[1]  [stored] a'
code='return redis.call("get", KEYS[1])'
expect_stop "a command in double quotes" '-- KEYS[1]  [stored] a'
code="return redis.call(...)"
expect_stop "(...) outside a helper" '-- KEYS[1]  [stored] a'

if [ "$failures" -ne 0 ]; then
    echo "$failures case(s) failed"
    exit 1
fi
