#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# scripts/deps.sh — make sure the Debian packages dlock builds and tests with are installed.
#
# Quiet when nothing is missing. As root it installs what is missing with apt-get (CI runs
# this on a fresh Debian 12 machine); otherwise it prints the command to run and fails.
# redis-server's package also starts a system redis on port 6379: harmless, and never
# used: every test and the demo start their own server on a unix socket (or a free loopback
# port). Likewise the system sentinel redis-sentinel's package may start on port 26379: the
# Sentinel tests start their own sentinels.
set -euo pipefail

packages=(
    cmake gcc make pkg-config
    libc6-dev # gcc only recommends it; --no-install-recommends would leave out libc headers
    libhiredis-dev libev-dev libcmocka-dev
    redis-server # brings redis-tools (redis-cli)
    redis-sentinel # the Sentinel tests start their own sentinels
    openssl # the TLS tests make their certificates at test time
    libssl-dev # the TLS transport
    valgrind
    clang # make test builds the tree with a second compiler
    libclang-rt-dev # clang's libFuzzer and sanitizer runtimes, for the fuzz stage
    clang-format # make lint checks the C files' format
    python3 # make lint: scripts/check-layers.py, scripts/check-docs.py
    jq # bench/run.sh prints its table with it
    debhelper dpkg-dev # make deb (scripts/build-deb.sh) and the deb test
    lintian # the deb test lints the packages
    groff-base man-db # tests/package/cli_docs_agree.py formats docs/dlock.1 with groff and man
)

if ! command -v dpkg-query >/dev/null 2>&1; then
    echo "deps.sh: not a Debian system; make sure these (or your system's equivalents) are" \
        "installed: ${packages[*]}" >&2
    exit 0
fi

missing=()
for pkg in "${packages[@]}"; do
    status=$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)
    if [ "$status" != "installed" ]; then
        missing+=("$pkg")
    fi
done

if [ "${#missing[@]}" -eq 0 ]; then
    exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
    echo "deps.sh: installing ${missing[*]}"
    apt-get update
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
else
    echo "dlock needs: sudo apt-get install -y ${missing[*]}"
    exit 1
fi
