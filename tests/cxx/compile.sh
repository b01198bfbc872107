#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/cxx/compile.sh SOURCE_DIR — include/dlock.hpp compiles clean with every C++ compiler
# installed of g++ and clang++, at -std=c++17 -Wall -Wextra -Werror -pedantic: the header
# alone, tests/cxx/test_cxx.cpp, tests/cxx/no_exceptions.cpp (with -fno-exceptions),
# examples/*.cpp, and every ```cpp block of docs/cpp.md (each a whole program, so that the
# page's code is code that compiles). -fsyntax-only: templates are instantiated, nothing is
# linked. Exits 77 (skipped) when neither compiler is installed.
set -euo pipefail

src=${1:?usage: compile.sh SOURCE_DIR}
work=$(mktemp -d "${TMPDIR:-/tmp}/dlock-cxx.XXXXXX")
trap 'rm -rf "$work"' EXIT

# The docs' blocks, one file each.
awk -v dir="$work" '
    /^```cpp$/ { n++; file = sprintf("%s/doc_block_%d.cpp", dir, n); inside = 1; next }
    /^```/ && inside { inside = 0; close(file); next }
    inside { print > file }
' "$src/docs/cpp.md"
doc_blocks=("$work"/doc_block_*.cpp)
if [ ! -e "${doc_blocks[0]}" ]; then
    echo "compile.sh: docs/cpp.md has no \`\`\`cpp block" >&2
    exit 1
fi

flags=(-std=c++17 -Wall -Wextra -Werror -pedantic -fsyntax-only
       -I "$src/include" -I "$src/tests/support")
compilers=0
for cxx in g++ clang++; do
    if ! command -v "$cxx" >/dev/null 2>&1; then
        echo "# $cxx: not installed, not checked"
        continue
    fi
    compilers=$((compilers + 1))
    "$cxx" "${flags[@]}" -x c++ "$src/include/dlock.hpp"
    "$cxx" "${flags[@]}" "$src/tests/cxx/test_cxx.cpp"
    "$cxx" "${flags[@]}" -fno-exceptions "$src/tests/cxx/no_exceptions.cpp"
    for f in "$src"/examples/*.cpp "${doc_blocks[@]}"; do
        "$cxx" "${flags[@]}" "$f"
    done
    echo "# $cxx: the header, tests/cxx, examples/*.cpp and ${#doc_blocks[@]} block(s) of docs/cpp.md compile"
done
if [ "$compilers" -eq 0 ]; then
    echo "compile.sh: neither g++ nor clang++ is installed" >&2
    exit 77
fi
