# SPDX-License-Identifier: MIT
# dlock — convenience wrapper around CMake (CMakeLists.txt is the build).
#
#   make            build the library and examples (build-release/, RelWithDebInfo)
#   make deps       install missing Debian packages (as root) or say which are missing
#   make demo       deps + build, then run the flash-sale demo against a private redis-server
#   make test       everything CI runs (scripts/test.sh): lint, clang + ASan/UBSan + TSan builds,
#                   every test under ASan/UBSan, a chosen set under valgrind, TSan, fuzz
#   make check      the fast loop: one Debug build, the unit and integration tests (scripts/check.sh)
#   make install    build, then install into $(PREFIX) (default /usr/local), honoring DESTDIR
#   make deb        the Debian packages libdlock0, libdlock-dev, dlock-tools (scripts/build-deb.sh,
#                   debian/) into $(DEB_DIR) (default build-deb/); install with dpkg -i
#   make format     clang-format -i every C file
#   make format-check  fail if any C file differs from clang-format's output (changes nothing)
#   make lint       static checks of the tree: src/core's floors (scripts/check-layers.py),
#                   the user docs' links (scripts/check-docs.py), the C files' format
#                   (make format-check)
#   make bench      the benchmarks (bench/run.sh)
#   make soak       the soak (tests/soak/run.sh, docs/soak.md): every primitive under faults
#                   for SOAK_S seconds (default 600); fails when anything grows or overlaps
#   make fuzz       the libFuzzer targets of tests/fuzz (build-fuzz/, clang), FUZZ_SECONDS
#                   each (default 60)
#   make clean      remove every build directory

PREFIX ?= /usr/local
DESTDIR ?=
BUILD_DIR ?= build-release
CMAKE ?= cmake
CMAKE_FLAGS ?=
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
FUZZ_SECONDS ?= 60
DEB_DIR ?= build-deb

FORMAT_DIRS := src include tests examples tools bench
# The C files clang-format owns: every .c/.h under FORMAT_DIRS but generated ones (a build's
# generated/ folder, should one sit in the tree) and third-party node_modules.
FORMAT_FILES = find $(wildcard $(FORMAT_DIRS)) \( -name generated -o -name node_modules \) -prune \
	-o -type f \( -name '*.c' -o -name '*.h' \) -print0

.PHONY: all deps build demo test check install deb format format-check lint clean bench fuzz soak

all: build

deps:
	scripts/deps.sh

build:
	$(CMAKE) -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		-DCMAKE_INSTALL_PREFIX="$(PREFIX)" -DDLOCK_BUILD_TESTS=OFF $(CMAKE_FLAGS)
	$(CMAKE) --build $(BUILD_DIR) -j $(JOBS)

demo: deps
	$(MAKE) build
	scripts/run-demo.sh $(BUILD_DIR)/examples/dlock-demo

test:
	scripts/test.sh

check:
	scripts/check.sh

install: build
	DESTDIR="$(DESTDIR)" $(CMAKE) --install $(BUILD_DIR) --prefix "$(PREFIX)"

deb:
	JOBS=$(JOBS) scripts/build-deb.sh $(DEB_DIR)

format:
	@command -v clang-format >/dev/null 2>&1 || { echo "make format needs clang-format (apt-get install clang-format)"; exit 1; }
	$(FORMAT_FILES) | xargs -0 -r clang-format -i

format-check:
	@command -v clang-format >/dev/null 2>&1 || { echo "make format-check needs clang-format (apt-get install clang-format)"; exit 1; }
	$(FORMAT_FILES) | xargs -0 -r clang-format --dry-run --Werror

lint: format-check
	python3 scripts/check-layers.py
	python3 scripts/check-docs.py

bench:
	@if [ -d bench ]; then \
		$(MAKE) build && DLOCK_BUILD_DIR="$(BUILD_DIR)" bench/run.sh; \
	else \
		echo "bench/ not built yet"; \
	fi

soak:
	tests/soak/run.sh

fuzz:
	FUZZ_SECONDS=$(FUZZ_SECONDS) tests/fuzz/run.sh

clean:
	rm -rf build build-clang build-asan build-tsan build-release build-fuzz build-logs build-deb
