# trialwatch — build, test, benchmark, run.
#
#   make test    install missing build dependencies, build with warnings as errors, run every test
#   make bench   release build; print every benchmark figure as `name: value unit`
#   make soak    the store's crash test with 1,000 kills instead of 50 (a few minutes)
#
SWIFT ?= swift
# Debian packages the build needs (C libraries with their pkg-config files).
APT_PACKAGES ?= pkg-config libsystemd-dev liblmdb-dev
STRICT = -Xswiftc -warnings-as-errors
BENCH_SCRATCH = .build-bench

.PHONY: all build deps test bench soak run clean

all: build

# Installs the Debian packages named in APT_PACKAGES that are not installed yet.
deps:
	@missing=""; \
	for pkg in $(APT_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$pkg 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$pkg"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  if [ "$$(id -u)" -ne 0 ]; then echo "error: need root to install$$missing (or install them first)" >&2; exit 1; fi; \
	  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$missing; \
	fi

build: deps
	$(SWIFT) build $(STRICT)

test: deps
	$(SWIFT) build --build-tests $(STRICT)
	$(SWIFT) test --skip-build

bench: deps
	$(SWIFT) build -c release --scratch-path $(BENCH_SCRATCH) $(STRICT)
	$(BENCH_SCRATCH)/release/trialwatch-bench

soak: deps
	$(SWIFT) build --build-tests $(STRICT)
	TRIALWATCH_CRASH_KILLS=$${TRIALWATCH_CRASH_KILLS:-1000} $(SWIFT) test --skip-build --filter CrashTests

# The embedded default: no root, no setup. State and socket under ./.trialwatch/, logs on
# stderr, Ctrl-C stops cleanly. In another terminal:
#   TRIALWATCH_SOCKET=.trialwatch/io.trialwatch .build/debug/trialwatchctl daemon-status
RUN_DIR = .trialwatch
run: deps
	$(SWIFT) build $(STRICT) --product trialwatchd
	$(SWIFT) build $(STRICT) --product trialwatchctl 2>/dev/null || true
	@mkdir -p $(RUN_DIR)
	@echo "trialwatchd: state in $(RUN_DIR)/state, socket $(RUN_DIR)/io.trialwatch (Ctrl-C stops)"
	.build/debug/trialwatchd --config etc/trialwatch.conf --state-dir $(RUN_DIR)/state --socket $(RUN_DIR)/io.trialwatch

clean:
	rm -rf .build $(BENCH_SCRATCH)
