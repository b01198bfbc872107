#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/package/run.sh [SOURCE_DIR] — the packaging, proven from outside (ctest label
# `package`).
#
#   1. configure and build dlock from SOURCE_DIR (default: this repository) with the default
#      prefix (/usr/local), install it into a temp prefix with `cmake --install --prefix`, and
#      check what landed there, and that dlock.pc finds its prefix from where it lies (no
#      configured path in it);
#   2. build tests/package/consumer (main.c) against that prefix four ways, and run each:
#        cmake-shared   find_package(dlock <version> EXACT) + target_link_libraries(dlock::dlock)
#        cmake-static   the same with dlock::dlock_static
#        pc-shared      cc main.c $(pkg-config --cflags --libs dlock)        (LD_LIBRARY_PATH;
#                       again with -Wl,-rpath,<libdir>, as the README says; and no flag of
#                       hiredis in what pkg-config gives)
#        pc-static      cc main.c $(pkg-config --static --cflags --libs dlock), libdlock.a
#                       picked with -Wl,-Bstatic
#      the consumer checks dlock_version_string() == DLOCK_VERSION_STRING;
#   3. check every version the package reports against include/dlock/version.h: the CMake
#      package (find_package EXACT, PACKAGE_VERSION of dlockConfigVersion.cmake), dlock.pc
#      (pkg-config --modversion), the shared library's file name and SONAME, bin/dlock
#      --version.
#
# Needs cmake, a C compiler, pkg-config and the build dependencies (hiredis, libev). The
# work directory is removed on success and kept (its path printed) on failure.
# DLOCK_PACKAGE_KEEP=1 keeps it always.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$(cd "${1:-$here/../..}" && pwd)
jobs=$(nproc 2>/dev/null || echo 2)
cc=${CC:-cc}

work=$(mktemp -d "${TMPDIR:-/tmp}/dlock-package.XXXXXX")
prefix="$work/prefix"
ok=0
finish() {
    if [ "$ok" -eq 1 ] && [ "${DLOCK_PACKAGE_KEEP:-0}" != 1 ]; then
        rm -rf "$work"
    else
        echo "package: work directory kept: $work" >&2
    fi
}
trap finish EXIT

step() { printf '\n== %s\n' "$*"; }
fail() {
    echo "package: FAIL: $*" >&2
    exit 1
}

# ---- the version, from the one place it lives --------------------------------------------
version_h="$src/include/dlock/version.h"
part() { sed -n "s/^#define[[:space:]]*DLOCK_VERSION_$1[[:space:]]*\([0-9][0-9]*\).*/\1/p" "$version_h"; }
major=$(part MAJOR)
minor=$(part MINOR)
patch=$(part PATCH)
if [ -z "$major" ] || [ -z "$minor" ] || [ -z "$patch" ]; then
    fail "no version in $version_h"
fi
version="$major.$minor.$patch"
echo "package: dlock $version from $src, work in $work"

# ---- 1. install --------------------------------------------------------------------------
step "configure (default prefix), build, cmake --install --prefix $prefix"
cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release \
    -DDLOCK_BUILD_TESTS=OFF -DDLOCK_BUILD_EXAMPLES=OFF -DDLOCK_BUILD_BENCH=OFF \
    -DDLOCK_BUILD_TOOLS=ON >"$work/configure.log" 2>&1 || {
    cat "$work/configure.log"
    fail "configure"
}
cmake --build "$work/build" -j "$jobs" >"$work/build.log" 2>&1 || {
    tail -50 "$work/build.log"
    fail "build"
}
cmake --install "$work/build" --prefix "$prefix" >"$work/install.log" 2>&1 || {
    cat "$work/install.log"
    fail "install"
}

pc=$(find "$prefix" -name dlock.pc -path '*/pkgconfig/*' | head -1)
[ -n "$pc" ] || fail "no dlock.pc installed"
libdir=$(dirname "$(dirname "$pc")")
for f in "$prefix/include/dlock.h" "$prefix/include/dlock/version.h" \
    "$prefix/include/dlock/adapters/libev.h" "$libdir/libdlock.a" \
    "$libdir/libdlock.so" "$libdir/libdlock.so.$major" "$libdir/libdlock.so.$version" \
    "$libdir/cmake/dlock/dlockConfig.cmake" "$libdir/cmake/dlock/dlockConfigVersion.cmake" \
    "$libdir/cmake/dlock/dlockTargets.cmake" "$prefix/bin/dlock" \
    "$prefix/share/man/man1/dlock.1"; do
    [ -e "$f" ] || fail "not installed: ${f#"$prefix"/}"
    echo "installed: ${f#"$prefix"/}"
done

# The prefix the build was configured with (/usr/local) is not where it was installed: dlock.pc
# must not name it, and its paths must lead into $prefix.
configured=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$work/build/CMakeCache.txt")
if grep -n "$configured" "$pc"; then
    fail "dlock.pc names the configured prefix $configured, not where it was installed"
fi
# inside DIR TOP: DIR exists and is TOP or under it (symlinks resolved)
inside() {
    local dir top
    dir=$(cd "$1" 2>/dev/null && pwd -P) || return 1
    top=$(cd "$2" && pwd -P)
    case "$dir/" in "$top"/*) return 0 ;; esac
    return 1
}
for variable in prefix libdir includedir; do
    where=$(PKG_CONFIG_PATH="$(dirname "$pc")" pkg-config --variable="$variable" dlock)
    inside "$where" "$prefix" || fail "dlock.pc: $variable=$where is not inside $prefix"
    echo "dlock.pc $variable = $where"
done

# ---- 3a. versions the package states ------------------------------------------------------
step "versions"
cmake_version=$(sed -n 's/^set(PACKAGE_VERSION "\(.*\)")$/\1/p' "$libdir/cmake/dlock/dlockConfigVersion.cmake")
[ "$cmake_version" = "$version" ] || fail "dlockConfigVersion.cmake says '$cmake_version', version.h $version"
echo "dlockConfigVersion.cmake PACKAGE_VERSION = $cmake_version"
export PKG_CONFIG_PATH="$libdir/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
pc_version=$(pkg-config --modversion dlock)
[ "$pc_version" = "$version" ] || fail "dlock.pc says '$pc_version', version.h $version"
echo "pkg-config --modversion dlock = $pc_version"
soname=$(readelf -d "$libdir/libdlock.so.$version" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = "libdlock.so.$major" ] || fail "SONAME '$soname', expected libdlock.so.$major"
echo "SONAME = $soname"
tool_version=$("$prefix/bin/dlock" --version)
[ "$tool_version" = "dlock $version" ] || fail "bin/dlock --version says '$tool_version'"
echo "bin/dlock --version = $tool_version"
# (the tools' output is read whole before grep looks at it: with pipefail, `grep -q` quitting
# at the first match could kill the writer with SIGPIPE and fail the check at random)
if grep -q 'NEEDED.*libdlock' <<<"$(readelf -d "$prefix/bin/dlock")"; then
    fail "bin/dlock needs libdlock.so at run time (it links the static library)"
fi

# ---- 2. consumers -------------------------------------------------------------------------
# run_app NAME BINARY [ENV...]: runs it, expects the version line.
run_app() {
    local name=$1 bin=$2 out
    shift 2
    out=$(env "$@" "$bin") || fail "$name: the consumer failed: $out"
    echo "$name: $out" | head -1
    case "$out" in
    "dlock $version (headers $version)"*) ;;
    *) fail "$name: unexpected output: $out" ;;
    esac
}

needs_libdlock_so() { grep -q 'NEEDED.*libdlock\.so' <<<"$(readelf -d "$1")"; }

for variant in shared static; do
    step "CMake consumer, $variant"
    target=dlock::dlock
    [ "$variant" = static ] && target=dlock::dlock_static
    dir="$work/consumer-cmake-$variant"
    cmake -S "$here/consumer" -B "$dir" -DCMAKE_PREFIX_PATH="$prefix" \
        -DDLOCK_CONSUMER_TARGET="$target" -DDLOCK_EXPECTED_VERSION="$version" \
        >"$dir.log" 2>&1 || {
        cat "$dir.log"
        fail "cmake-$variant: configure"
    }
    grep 'dlock .* from' "$dir.log" || true
    cmake --build "$dir" >>"$dir.log" 2>&1 || {
        cat "$dir.log"
        fail "cmake-$variant: build"
    }
    if [ "$variant" = shared ]; then
        needs_libdlock_so "$dir/app" || fail "cmake-shared: app does not link libdlock.so"
        # CMake's build RPATH points at the prefix: no LD_LIBRARY_PATH needed.
        grep -q "$libdir/libdlock.so.$major" <<<"$(ldd "$dir/app")" ||
            fail "cmake-shared: app does not load the installed libdlock.so: $(ldd "$dir/app")"
    else
        needs_libdlock_so "$dir/app" && fail "cmake-static: app needs libdlock.so"
    fi
    run_app "cmake-$variant" "$dir/app"
done

# A version that is not the package's is refused by find_package(... EXACT).
step "CMake consumer, wrong version refused"
wrong="$((major + 1)).0.0"
if cmake -S "$here/consumer" -B "$work/consumer-wrong" -DCMAKE_PREFIX_PATH="$prefix" \
    -DDLOCK_EXPECTED_VERSION="$wrong" >"$work/consumer-wrong.log" 2>&1; then
    fail "find_package(dlock $wrong EXACT) succeeded against $version"
fi
echo "find_package(dlock $wrong EXACT) refused, as it must be"

step "pkg-config consumer, shared"
echo "pkg-config --cflags --libs dlock: $(pkg-config --cflags --libs dlock)"
# The public headers use no hiredis: its include folder and defines are not the consumer's.
case "$(pkg-config --cflags --libs dlock)" in
*hiredis* | *_FILE_OFFSET_BITS*) fail "pc-shared: pkg-config gives consumers hiredis' flags" ;;
esac
# shellcheck disable=SC2046 # word splitting of pkg-config output is intended
"$cc" -o "$work/app-pc-shared" "$here/consumer/main.c" $(pkg-config --cflags --libs dlock)
needs_libdlock_so "$work/app-pc-shared" || fail "pc-shared: app does not link libdlock.so"
run_app pc-shared "$work/app-pc-shared" LD_LIBRARY_PATH="$libdir"
# The README's line for a private prefix: an rpath, so the program finds libdlock.so alone.
# shellcheck disable=SC2046
"$cc" -o "$work/app-pc-rpath" "$here/consumer/main.c" $(pkg-config --cflags --libs dlock) \
    -Wl,-rpath,"$(pkg-config --variable=libdir dlock)"
run_app pc-rpath "$work/app-pc-rpath"

step "pkg-config consumer, static"
echo "pkg-config --static --cflags --libs dlock: $(pkg-config --static --cflags --libs dlock)"
libs_other=$(pkg-config --static --libs-only-l dlock | sed 's/\(^\| \)-ldlock\( \|$\)/ /')
# shellcheck disable=SC2046,SC2086
"$cc" -o "$work/app-pc-static" "$here/consumer/main.c" $(pkg-config --static --cflags dlock) \
    $(pkg-config --libs-only-L dlock) -Wl,-Bstatic -ldlock -Wl,-Bdynamic $libs_other
needs_libdlock_so "$work/app-pc-static" && fail "pc-static: app needs libdlock.so"
run_app pc-static "$work/app-pc-static"

ok=1
printf '\npackage: all checks passed (dlock %s: cmake shared+static, pkg-config shared+static)\n' \
    "$version"
