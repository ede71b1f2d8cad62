# trialwatch — build, test, benchmark, run.
#
#   make test    install missing build dependencies, build with warnings as errors, run every test
#   make bench   release build; print every benchmark figure as `name: value unit`
#
SWIFT ?= swift
# Debian packages the build needs (C libraries with their pkg-config files).
APT_PACKAGES ?= pkg-config libsystemd-dev
STRICT = -Xswiftc -warnings-as-errors
BENCH_SCRATCH = .build-bench

.PHONY: all build deps test bench clean

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

clean:
	rm -rf .build $(BENCH_SCRATCH)
