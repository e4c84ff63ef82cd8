# Lanai: `make` builds everything into build/; `make run` runs the example
# job; `make test` runs every test (what CI runs).
CARGO ?= cargo
PROFILE ?= release
TARGET_DIR := $(or $(CARGO_TARGET_DIR),target)
OUT := $(TARGET_DIR)/$(PROFILE)
NP ?= 4

.PHONY: all build run test test-rust test-c lint clean

all: build

build:
	$(CARGO) build --profile $(PROFILE) --workspace
	mkdir -p build/lib build/bin build/include build/examples
	install -m 755 $(OUT)/libmpi.so build/lib/libmpi.so.12
	ln -sf libmpi.so.12 build/lib/libmpich.so.12
	ln -sf libmpi.so.12 build/lib/libmpi.so
	ln -sf libmpi.so.12 build/lib/libmpich.so
	install -m 644 include/mpi.h build/include/mpi.h
	install -m 755 $(OUT)/lanairun $(OUT)/lanaicc $(OUT)/lanai-info $(OUT)/lanai-devbench $(OUT)/lanai-engine build/bin/
	install -m 755 eval/lanai-eval build/bin/lanai-eval
	ln -sf lanairun build/bin/mpiexec
	ln -sf lanairun build/bin/mpirun
	ln -sf lanaicc build/bin/mpicc
	for w in lanaicxx mpicxx mpic++ lanaifort mpifort mpif90 mpif77; do ln -sf lanaicc build/bin/$$w; done

run: build
	build/bin/lanaicc -O2 -o build/examples/ring examples/ring.c
	build/bin/lanairun --timeout 60 -n $(NP) build/examples/ring

# Lints and Rust unit tests use the dev profile: they compile much faster,
# and nothing in them measures speed.
lint:
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

test-rust:
	$(CARGO) test --workspace

test-c: build
	python3 -m pytest tests -q

test: build lint test-rust test-c

clean:
	$(CARGO) clean
	rm -rf build tests/c/out tests/f/out eval/build
