# minirt developer entry points. `make run` and `make test` set everything up on a
# fresh machine: Debian packages (as root), the virtual environment and the package.

# libclang-rt-14-dev: clang's sanitizer runtime, so the runtime's AddressSanitizer fuzz
# (tests/module/test_module_runtime_c.py) runs in `make test` instead of skipping; 14 is
# Debian 12's clang.
VENV      := .venv
PY        := $(VENV)/bin/python
STAMP     := $(VENV)/.installed
APT_PKGS  := clang lld llvm libclang-rt-14-dev qemu-system-arm qemu-system-misc qemu-user \
             gcc-arm-none-eabi gcc-riscv64-unknown-elf
EXAMPLE   ?= examples/seed.mlir
BOARD     ?= cortex-m4
JOBS      ?= 2

.PHONY: setup apt test lint run fuzz fuzz-random fuzz-module fuzz-parse size-report conformance \
        clean

setup: apt $(STAMP)

# Installs only the packages that are missing, so a second run costs one dpkg query.
apt:
	@missing=$$(for p in $(APT_PKGS); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "setup: installing Debian packages:" $$missing; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	  else \
	    echo "setup: missing Debian packages (run 'sudo make setup'):" $$missing; exit 1; \
	  fi; \
	fi

$(STAMP): pyproject.toml
	@test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev,tune]'
	@touch $(STAMP)

test: setup
	$(PY) -m pytest -n $(JOBS)

# Both campaigns below; the second runs even when the first finds failures, and make
# fails if either did.
fuzz: setup
	@rc=0; $(MAKE) --no-print-directory fuzz-random || rc=1; \
	$(MAKE) --no-print-directory fuzz-module || rc=1; exit $$rc

# Random differential testing: 1,000 random graphs (every graph op, random shapes, element
# types and attributes) compiled and run on cortex-m4, riscv32, aarch64 and x86-64 under
# QEMU against the reference, failures shrunk into bench/results/fuzz_failures/ (make test
# runs a sample of it); results in bench/results/random_graphs.{json,md}.
fuzz-random: setup
	$(PY) bench/random_graphs.py --jobs $(JOBS)

# The full structural fuzz of the module under QEMU (make test runs a sample of it);
# results in bench/results/module_fuzz.{json,md}.
fuzz-module: setup
	$(PY) bench/module_fuzz.py --jobs $(JOBS)

# The reader fuzz: 100,000 mutated models, MLIR, TFLite and ONNX (the shared ones, the
# repo's, and any given as FUZZ_MODELS=...; text mutations for MLIR, structured edits of
# attributes, dims, quantization parameters and opsets for all three) through load +
# import + verify, each a verified graph or a one-line located error (make test runs a
# sample of it); results in bench/results/fuzz_parse.{json,md}.
fuzz-parse: setup
	$(PY) bench/fuzz_parse.py --jobs $(JOBS) $(FUZZ_MODELS)

# Flash and RAM of every shared model on every board (fits, over budget or does not fit,
# with what overflows); results in bench/results/size_report.{json,md}.
size-report: setup
	$(PY) bench/size_report.py --jobs $(JOBS)

# ONNX's backend node tests and the StableHLO interpreter's tests (../shared/suites/) on
# the reference, and a deterministic sample of the passes on cortex-m4 and x86-64 under
# QEMU (make test runs a smaller sample); fails on any wrong answer or crash. Results in
# bench/results/conformance.{json,md}.
conformance: setup
	$(PY) bench/conformance.py

lint: setup
	$(VENV)/bin/ruff check toolchain tests bench

# The main job: build the firmware (size report), run it under QEMU, check the numbers.
run: setup
	$(VENV)/bin/minirt-build --board $(BOARD) $(EXAMPLE)
	$(VENV)/bin/minirt-run --board $(BOARD) --check $(EXAMPLE)

clean:
	rm -rf build .pytest_cache
