# dlock — convenience wrapper around CMake (CMakeLists.txt is the build).
#
#   make            build the library and examples (build-release/, RelWithDebInfo)
#   make deps       install missing Debian packages (as root) or say which are missing
#   make demo       deps + build, then run the flash-sale demo against a private redis-server
#   make test       everything CI runs: build/ + ctest + valgrind + ASan/UBSan + TSan
#   make install    build, then install into $(PREFIX) (default /usr/local), honoring DESTDIR
#   make format     clang-format -i every C file
#   make lint       static checks of the tree: src/core's layers (scripts/check-layers.py),
#                   the user docs' links (scripts/check-docs.py)
#   make bench      the benchmarks (bench/run.sh)
#   make clean      remove every build directory

PREFIX ?= /usr/local
DESTDIR ?=
BUILD_DIR ?= build-release
CMAKE ?= cmake
CMAKE_FLAGS ?=
JOBS ?= $(shell nproc 2>/dev/null || echo 2)

FORMAT_DIRS := src include tests examples tools bench

.PHONY: all deps build demo test install format lint clean bench

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

install: build
	DESTDIR="$(DESTDIR)" $(CMAKE) --install $(BUILD_DIR) --prefix "$(PREFIX)"

format:
	@command -v clang-format >/dev/null 2>&1 || { echo "make format needs clang-format (apt-get install clang-format)"; exit 1; }
	find $(wildcard $(FORMAT_DIRS)) -type f \( -name '*.c' -o -name '*.h' \) -print0 \
		| xargs -0 -r clang-format -i

lint:
	python3 scripts/check-layers.py
	python3 scripts/check-docs.py

bench:
	@if [ -d bench ]; then \
		$(MAKE) build && DLOCK_BUILD_DIR="$(BUILD_DIR)" bench/run.sh; \
	else \
		echo "bench/ not built yet"; \
	fi

clean:
	rm -rf build build-asan build-tsan build-release
