#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# scripts/build-deb.sh [OUT_DIR] — the Debian packages (`make deb`): libdlock0, libdlock-dev,
# dlock-tools, their source package and .changes, built by dpkg-buildpackage from debian/.
#
# dpkg-buildpackage works in the source tree it is given and writes its results beside it, so
# it gets a copy of this tree (the files git knows, committed or not, untracked ones that are
# not ignored; every file but the build directories when this is no git checkout) in
# OUT_DIR/dlock-VERSION, and the packages land in OUT_DIR (default: build-deb/). The working
# tree is left alone: nothing is written outside OUT_DIR.
#
# DEB_BUILD_OPTIONS defaults to "nocheck parallel=$JOBS" (JOBS: default nproc): the package
# build runs no tests; dlock's own test suite is the place for them. Needs debhelper and
# dpkg-dev (scripts/deps.sh installs them); no root.
set -euo pipefail

src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${1:-$src/build-deb}
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}

for tool in dpkg-buildpackage dpkg-parsechangelog dh; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "build-deb: $tool not found: apt-get install debhelper dpkg-dev" \
            "(or make deps as root)" >&2
        exit 1
    fi
done

# The package's version is the library's: debian/changelog must name include/dlock/version.h's.
part() {
    sed -n "s/^#define[[:space:]]*DLOCK_VERSION_$1[[:space:]]*\([0-9][0-9]*\).*/\1/p" \
        "$src/include/dlock/version.h"
}
version="$(part MAJOR).$(part MINOR).$(part PATCH)"
deb_version=$(dpkg-parsechangelog -l "$src/debian/changelog" -S Version)
if [ "$deb_version" != "$version" ]; then
    echo "build-deb: debian/changelog is at $deb_version, include/dlock/version.h at $version:" \
        "add a changelog entry (dch -v $version)" >&2
    exit 1
fi

mkdir -p "$out"
out=$(cd "$out" && pwd)
tree="$out/dlock-$version"
rm -rf "$tree"
rm -f "$out"/dlock_"$version"* "$out"/libdlock*_"$version"_* "$out"/dlock-tools*_"$version"_*
mkdir -p "$tree"

if git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    # Files deleted in the working tree but still in the index are listed too: skip them.
    git -C "$src" ls-files -z --cached --others --exclude-standard |
        while IFS= read -r -d '' f; do [ -e "$src/$f" ] && printf '%s\0' "$f"; done |
        (cd "$src" && tar --null -T - -cf -) | tar -xf - -C "$tree"
else
    (cd "$src" && tar --exclude='./build*' --exclude='./debian/.debhelper' -cf - .) |
        tar -xf - -C "$tree"
fi

# The packages are built with Debian's flags (dpkg-buildflags: hardening, -O2 -g), which
# debhelper takes only when the environment sets none: a CFLAGS of the caller's (a sanitizer
# build's, say) does not leak into them. DEB_CFLAGS_APPEND and the like still add to them.
unset CFLAGS CPPFLAGS CXXFLAGS LDFLAGS

echo "build-deb: dlock $version in $tree (DEB_BUILD_OPTIONS=${DEB_BUILD_OPTIONS:-nocheck parallel=$jobs})"
(cd "$tree" && DEB_BUILD_OPTIONS=${DEB_BUILD_OPTIONS:-nocheck parallel=$jobs} \
    dpkg-buildpackage -us -uc)
echo "build-deb: packages in $out:"
ls -1 "$out"/*_"$version"*.deb
