#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/package/deb.sh [SOURCE_DIR] — the Debian packages, built, linted, installed, used and
# removed (ctest label `deb`).
#
#   1. scripts/build-deb.sh builds libdlock0, libdlock-dev and dlock-tools into a temp
#      directory (the symbols check is part of that build: debian/rules runs dpkg-gensymbols
#      with -c4, so an exported symbol added or gone fails it);
#   2. lintian on the .changes (source and binary packages): any E: or W: fails;
#   3. what each package holds and depends on: libdlock-dev needs only libdlock0 (no -dev
#      package of hiredis, libev or OpenSSL), dlock.pc has no Requires;
#   4. as root: dpkg -i the three; `dlock` on PATH is /usr/bin/dlock and says the version;
#      man finds dlock(1); tests/package/consumer builds and runs against /usr with
#      find_package(dlock) (shared, also with hiredis, libev and OpenSSL made unfindable, and
#      static) and with pkg-config (shared); then dpkg --purge, and no file of the packages
#      is left.
#
# It takes one to two minutes: dpkg-buildpackage builds the library once more, lintian reads
# every package, and the consumer is built four ways.
#
# Exit 77 (ctest: skipped), saying why, when dpkg-buildpackage, debhelper or lintian are
# missing (scripts/deps.sh installs them), and after steps 1-3 when not root or when dlock
# packages are installed already (the test would replace and then remove them).
#
# Why a real install into /usr and not `dpkg --root` into a scratch root: "installed from
# the .debs, a program builds with pkg-config and find_package, and dlock is on PATH" is a
# claim about the system's own search paths, which a scratch root would have to fake (a
# sysroot for the compiler, pkg-config and CMake, a dpkg database with libc6 in it). The
# install is safe beside the other tests: no other test looks dlock up on the system (the
# tests run <build>/tools/dlock by path and link the build tree's library by rpath;
# tests/package/run.sh searches its own prefix first: CMAKE_PREFIX_PATH, PKG_CONFIG_PATH,
# -I/-L and an rpath or LD_LIBRARY_PATH, and find_package(EXACT) of another version refuses
# the /usr one too). Two runs of this test at once (two ctest runs on one machine) would
# remove each other's install: an flock on /run/lock/dlock-deb-test.lock serialises them,
# and a trap purges the packages whatever fails.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$(cd "${1:-$here/../..}" && pwd)
cc=${CC:-cc}
packages=(libdlock0 libdlock-dev dlock-tools)

skip() {
    ok=1 # nothing failed: the work directory goes
    echo "deb: SKIPPED: $*"
    exit 77
}
fail() {
    echo "deb: FAIL: $*" >&2
    exit 1
}
step() { printf '\n== %s\n' "$*"; }

for tool in dpkg-buildpackage dh lintian dpkg-deb; do
    command -v "$tool" >/dev/null 2>&1 ||
        skip "$tool not found (apt-get install debhelper dpkg-dev lintian, or make deps as root)"
done

work=$(mktemp -d "${TMPDIR:-/tmp}/dlock-deb.XXXXXX")
installed=0
ok=0
finish() {
    if [ "$installed" -eq 1 ]; then
        echo "deb: removing the packages"
        dpkg --purge "${packages[@]}" >/dev/null 2>&1 || echo "deb: dpkg --purge failed" >&2
    fi
    if [ "$ok" -eq 1 ] && [ "${DLOCK_PACKAGE_KEEP:-0}" != 1 ]; then
        rm -rf "$work"
    else
        echo "deb: work directory kept: $work" >&2
    fi
}
trap finish EXIT

version_h="$src/include/dlock/version.h"
part() { sed -n "s/^#define[[:space:]]*DLOCK_VERSION_$1[[:space:]]*\([0-9][0-9]*\).*/\1/p" "$version_h"; }
major=$(part MAJOR)
version="$major.$(part MINOR).$(part PATCH)"
arch=$(dpkg --print-architecture)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
deb() { echo "$work/out/$1_${version}_$arch.deb"; }

# ---- 1. build ------------------------------------------------------------------------------
step "build (scripts/build-deb.sh $work/out)"
JOBS=${JOBS:-2} "$src/scripts/build-deb.sh" "$work/out" >"$work/build.log" 2>&1 || {
    tail -60 "$work/build.log"
    fail "the package build failed (a symbols difference shows as dpkg-gensymbols' diff" \
        "above: update debian/libdlock0.symbols)"
}
for p in "${packages[@]}"; do
    [ -f "$(deb "$p")" ] || fail "not built: $(deb "$p")"
    echo "built: $(basename "$(deb "$p")")"
done

# ---- 2. lintian ----------------------------------------------------------------------------
step "lintian"
changes="$work/out/dlock_${version}_$arch.changes"
lintian --info "$changes" >"$work/lintian.log" 2>&1 || true
cat "$work/lintian.log"
if grep -q '^[EW]: ' "$work/lintian.log"; then
    fail "lintian reports errors or warnings"
fi
grep -q '^internal error\|^Traceback\|^Can.t ' "$work/lintian.log" && fail "lintian did not run"
echo "lintian: no error, no warning"

# ---- 3. contents and dependencies ----------------------------------------------------------
step "contents"
contents() { dpkg-deb -c "$(deb "$1")" | awk '{print substr($6, 2)}'; }
expect() { # expect PACKAGE PATH...
    local p=$1 list
    shift
    list=$(contents "$p")
    for f in "$@"; do
        grep -qxF "$f" <<<"$list" || fail "$p lacks $f"
    done
}
lib="/usr/lib/$multiarch"
expect libdlock0 "$lib/libdlock.so.$major" "$lib/libdlock.so.$version" \
    /usr/share/doc/libdlock0/copyright
expect libdlock-dev /usr/include/dlock.h /usr/include/dlock.hpp /usr/include/dlock/version.h \
    "$lib/libdlock.so" \
    "$lib/libdlock.a" "$lib/pkgconfig/dlock.pc" "$lib/cmake/dlock/dlockConfig.cmake"
expect dlock-tools /usr/bin/dlock /usr/share/man/man1/dlock.1.gz
dev_depends=$(dpkg-deb -f "$(deb libdlock-dev)" Depends)
echo "libdlock-dev Depends: $dev_depends"
[ "$dev_depends" = "libdlock0 (= $version)" ] ||
    fail "libdlock-dev must depend on libdlock0 alone (a shared link needs no other -dev)"
pc=$(dpkg-deb --fsys-tarfile "$(deb libdlock-dev)" | tar -xOf - ".$lib/pkgconfig/dlock.pc")
if grep -n '^Requires' <<<"$pc"; then
    fail "dlock.pc has Requires: a shared link would need those packages' .pc files"
fi
if ! grep -qx 'prefix=/usr' <<<"$pc"; then
    fail "dlock.pc's prefix is not /usr"
fi

# ---- 4. install, use, remove ---------------------------------------------------------------
[ "$(id -u)" -eq 0 ] || skip "built and linted; installing needs root (dpkg -i)"
for p in "${packages[@]}"; do
    status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
    if [ -n "$status" ] && [ "$status" != not-installed ] && [ "$status" != config-files ]; then
        skip "built and linted; $p is installed already ($status): not replacing it"
    fi
done

exec 9>/run/lock/dlock-deb-test.lock
flock 9 # a concurrent run of this test installs and removes the same packages

step "dpkg -i"
installed=1
dpkg -i "$(deb libdlock0)" "$(deb libdlock-dev)" "$(deb dlock-tools)" >"$work/install.log" 2>&1 || {
    cat "$work/install.log"
    fail "dpkg -i"
}

step "dlock on PATH"
where=$(PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin command -v dlock)
[ "$where" = /usr/bin/dlock ] || fail "dlock on PATH is '$where', not /usr/bin/dlock"
tool_version=$(dlock --version)
[ "$tool_version" = "dlock $version" ] || fail "dlock --version says '$tool_version'"
echo "$where --version = $tool_version"
if command -v man >/dev/null 2>&1; then
    page=$(man -w dlock)
    [ "$page" = /usr/share/man/man1/dlock.1.gz ] || fail "man -w dlock: '$page'"
    echo "man -w dlock = $page"
fi

# consumer NAME [CMAKE ARGS...]: configures, builds and runs tests/package/consumer against the
# system (no prefix given), checking it found /usr's package
consumer() {
    local name=$1 dir="$work/consumer-$1" out
    shift
    cmake -S "$here/consumer" -B "$dir" -DDLOCK_EXPECTED_VERSION="$version" "$@" \
        >"$dir.log" 2>&1 || {
        cat "$dir.log"
        fail "$name: configure"
    }
    grep -q "dlock $version from $lib/cmake/dlock;" "$dir.log" || {
        grep 'dlock .* from' "$dir.log" || true
        fail "$name: find_package did not find $lib/cmake/dlock"
    }
    cmake --build "$dir" >>"$dir.log" 2>&1 || {
        cat "$dir.log"
        fail "$name: build"
    }
    out=$("$dir/app") || fail "$name: the consumer failed: $out"
    echo "$name: $(head -1 <<<"$out")"
}

step "find_package(dlock), shared"
consumer cmake-shared -DDLOCK_CONSUMER_TARGET=dlock::dlock
# (ldd may name it through /lib, a link to /usr/lib on a merged-/usr system)
loaded=$(ldd "$work/consumer-cmake-shared/app" | sed -n "s/^[[:space:]]*libdlock\.so\.$major => \([^ ]*\) .*/\1/p")
if [ -z "$loaded" ] || [ "$(readlink -f "$loaded")" != "$(readlink -f "$lib/libdlock.so.$major")" ]; then
    fail "cmake-shared: app loads '$loaded', not $lib/libdlock.so.$major"
fi
echo "cmake-shared: loads $loaded"

# The -dev packages of hiredis, libev and OpenSSL are installed here (dlock builds with them):
# hide them from CMake to show that find_package(dlock) and a shared link do without them.
step "find_package(dlock), shared, hiredis/libev/OpenSSL not findable"
consumer cmake-shared-alone -DDLOCK_CONSUMER_TARGET=dlock::dlock \
    -DCMAKE_DISABLE_FIND_PACKAGE_PkgConfig=ON -DCMAKE_DISABLE_FIND_PACKAGE_OpenSSL=ON \
    "-DCMAKE_IGNORE_PATH=/usr/include;/usr/include/libev;$lib;/usr/lib"
if cmake -S "$here/consumer" -B "$work/consumer-static-alone" \
    -DDLOCK_CONSUMER_TARGET=dlock::dlock_static -DDLOCK_REQUIRE_STATIC=ON \
    -DCMAKE_DISABLE_FIND_PACKAGE_PkgConfig=ON -DCMAKE_DISABLE_FIND_PACKAGE_OpenSSL=ON \
    "-DCMAKE_IGNORE_PATH=/usr/include;/usr/include/libev;$lib;/usr/lib" \
    >"$work/consumer-static-alone.log" 2>&1; then
    fail "find_package(dlock COMPONENTS static) succeeded without hiredis, libev and OpenSSL"
fi
grep -q 'dlock::dlock_static needs hiredis' "$work/consumer-static-alone.log" || {
    cat "$work/consumer-static-alone.log"
    fail "find_package(dlock COMPONENTS static) failed without naming what is missing"
}
echo "find_package(dlock COMPONENTS static) without them: refused, naming them"

step "find_package(dlock COMPONENTS static), static"
consumer cmake-static -DDLOCK_CONSUMER_TARGET=dlock::dlock_static -DDLOCK_REQUIRE_STATIC=ON
if grep -q 'NEEDED.*libdlock' <<<"$(readelf -d "$work/consumer-cmake-static/app")"; then
    fail "cmake-static: app needs libdlock.so"
fi

step "pkg-config, shared"
flags=$(pkg-config --cflags --libs dlock | sed "s/[[:space:]]*$//")
echo "pkg-config --cflags --libs dlock: $flags"
[ "$flags" = "-ldlock" ] || fail "pkg-config gives '$flags', expected -ldlock alone"
# shellcheck disable=SC2086 # word splitting of pkg-config output is intended
"$cc" -o "$work/app-pc" "$here/consumer/main.c" $flags
out=$("$work/app-pc") || fail "pc-shared: the consumer failed: $out"
echo "pc-shared: $(head -1 <<<"$out")"

step "dpkg --purge"
files=$(for p in "${packages[@]}"; do dpkg -L "$p"; done | sort -u)
dpkg --purge "${packages[@]}" >"$work/purge.log" 2>&1 || {
    cat "$work/purge.log"
    fail "dpkg --purge"
}
installed=0
for p in "${packages[@]}"; do
    status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
    [ -z "$status" ] || [ "$status" = not-installed ] || fail "$p is still '$status'"
done
left=0
while IFS= read -r f; do
    # Directories the system shares (/usr/include, /usr/share/man/man1, ...) stay.
    if [ -e "$f" ] && [ ! -d "$f" ] || [ -L "$f" ]; then
        echo "left behind: $f" >&2
        left=1
    fi
done <<<"$files"
for d in /usr/include/dlock "$lib/cmake/dlock" /usr/share/doc/libdlock0 \
    /usr/share/doc/libdlock-dev /usr/share/doc/dlock-tools; do
    [ ! -e "$d" ] || {
        echo "left behind: $d" >&2
        left=1
    }
done
[ "$left" -eq 0 ] || fail "files of the packages are left after dpkg --purge"
echo "nothing left of ${packages[*]}"

ok=1
printf '\ndeb: all checks passed (dlock %s: built, lintian clean, installed, used, removed)\n' \
    "$version"
