# trialwatch — build, test, benchmark, run.
#
#   make test    install missing build dependencies, build with warnings as errors, run every test
#                (the Swift tests, the dashboard in a browser, then install-check and e2e)
#   make browser-test  the HTTP gateway's dashboard in Debian's chromium, headless, driven by
#                Selenium, against the debug trialwatchd with 1,000 trials; a screenshot of each
#                page in .build/artifacts/browser/ (part of make test; under a minute once built)
#   make bench   release build; print every benchmark figure as `name: value unit`, saved in
#                .build-bench/bench.out (docs/benchmarks.md)
#   make bench-peers  release build; trialwatch against at, systemd timers, PostgreSQL, SQLite
#                and Redis pollers on the same workloads (bench/peers/, about an hour; root for
#                at, systemd and PostgreSQL), every figure as `name: value unit`, then the ratios,
#                saved in .build-bench/peers.out
#   make bench-peers-check  the same harness on tiny workloads, its output checked (part of
#                make test; a minute or two)
#   make bench-fleet  release build; the fleet figures (three nodes on PostgreSQL) against a
#                db-scheduler-style poller on the same cluster (bench/fleet/, about 10 minutes);
#                make bench runs it last
#   make bench-fleet-check  the same on small workloads, its output checked (a few minutes)
#   make bench-http  release build; the HTTP gateway's figures, the dashboard's pages with
#                1,000,000 trials among them (bench/http/, a few minutes), saved in
#                .build-bench/http.out
#   make bench-figures  docs/benchmark-figures.md from the outputs make bench, make bench-peers
#                and make bench-http saved (BENCH_OUTPUT="FILE...", BENCH_DATE=, BENCH_COMMIT= to
#                give others)
#   make fleet-test  three release nodes in fleet mode on a private PostgreSQL, nodes killed and
#                stopped and the cluster restarted under load; nothing lost or taken twice,
#                failover within the lease's bound; then a PostgreSQL primary failover to its
#                standby under load (Tests/fleet/; part of make test; 4-5 minutes)
#   make soak    the store's crash test with 1,000 kills instead of 50 (a few minutes)
#   make fuzz    coverage-guided fuzzing: the targets of FuzzTesting/ built with libFuzzer and
#                AddressSanitizer, each run FUZZ_SECONDS (default 60) over its corpus; a crash or a
#                failed check is written to FuzzTesting/Regressions/<target>/ and fails the run.
#                FUZZ_TARGETS="control text" picks targets (not in make test, which replays the
#                committed inputs in the Swift tests; docs/fuzzing.md)
#   make fuzz-check  the same build; each target runs its committed inputs and 2,000 more from a
#                fixed seed (FUZZ_CHECK_RUNS) with AddressSanitizer and LeakSanitizer; a finding fails
#                it and is left in FuzzTesting/.build/findings/<target>/ (part of make test; about
#                4 minutes on a fresh clone, most of it the build)
#   make run     run trialwatchd from the checkout, state and socket under ./.trialwatch/
#   make format      format the Swift sources with swift-format and .swift-format
#   make locale-table  Sources/TrialCtl/Dates/LocaleTable.swift written again from Foundation's ICU
#                    by trialwatch-locale-table (the date texts of every supported locale)
#   make lint        check the formatting and that nothing shipped imports Foundation (part of
#                    make test)
#   make lint-binaries  release build, then check it holds no symbol of Foundation or ICU (nm;
#                    part of make test)
#   make release     the release program (static Swift runtime) in .build-release/release/:
#                    trialwatchd, and trialwatchctl, trialwatch-webhooks and trialwatch-http links to
#                    it; and
#                    generated from them the man pages (.build-release/man/) and the bash, zsh and
#                    fish completions (.build-release/completions/)
#   make hot-functions  release build, then release/hot-functions.txt written again from a run of it
#                    under valgrind (installed if missing; about a minute), then linked again: the
#                    functions placed together by make release (docs/footprint.md)
#   make install     release build, then install binaries, units, sysusers.d, catalog, man pages,
#                    shell completions, the documents (README.md, docs/*.md), the sample
#                    configuration and the examples (a consumer's configuration, the fleet
#                    drop-in, two plans, a webhook endpoint, Prometheus alerting rules) under
#                    $(DESTDIR)$(PREFIX) and
#                    $(DESTDIR)/etc (PREFIX=/usr); with DESTDIR empty also creates the users and
#                    reloads systemd (docs/install.md)
#   make install-files  the same without building (after make release)
#   make uninstall   remove what install put (not a changed configuration, not /var/lib/trialwatch)
#   make install-check  install into a temporary DESTDIR and check the tree, the man pages
#                    (mandoc -T lint) and the completions (no root needed)
#   make e2e         boot systemd in a container and test the installed service (root; else SKIP)
#   make deb         release build, then the Debian package .build-deb/trialwatch_<version>_<arch>.deb
#                    (debhelper), checked by lintian; DEB_VERSION=V builds it with another version
#   make e2e-package boot systemd in a container and install, upgrade, remove and purge the package
#
SWIFT ?= swift
# Debian packages the build needs (C libraries with their pkg-config files).
# mandoc: `mandoc -T lint` checks the man pages (make install-check and the Swift tests).
# binutils: nm, for make lint-binaries and the fuzz build's check of AddressSanitizer.
# tzdata: the zones trialwatchctl shows dates in, read by its tests.
# libcurl4-openssl-dev, libssl-dev: the declarations of libcurl and libcrypto, which the webhooks
# open at run time (libcurl4, libssl3); openssl makes the webhook tests' CA and certificate.
# libmicrohttpd-dev: the declarations of libmicrohttpd, which the HTTP gateway opens at run time
# (libmicrohttpd12); curl, the client of the gateway's tests and of make e2e's requests to it.
# The peers of make bench-peers: postgresql, redis-server, at, sqlite3, and Debian's python3
# with python3-psycopg2 and python3-redis for the harness (their system services are not used).
# librsvg2-bin (rsvg-convert) renders the chart of trialwatchctl stats --svg in its test.
# chromium, chromium-driver: the browser and its WebDriver (/usr/bin/chromedriver) that make
# browser-test drives through Selenium (PIP_PACKAGES), Debian's both, so that Selenium downloads
# nothing. python3-pip: pip for Debian's python3, which installs PIP_PACKAGES.
# gcc: cc, which compiles the test's LD_PRELOAD shim that fails a write or fdatasync of the store
# (Tests/faults/sync_fault.c, in the Swift tests).
# prometheus: promtool, which checks the example alerting rules (etc/prometheus, in the Swift
# tests) and the metrics make e2e writes for the node exporter and reads back from it, and the
# server, which make e2e runs in the container's network namespace to scrape the HTTP gateway
# (the node exporter runs in the container, installed there by debootstrap).
APT_PACKAGES ?= pkg-config binutils tzdata libsystemd-dev liblmdb-dev libpq-dev libunistring-dev \
  libcurl4-openssl-dev libssl-dev openssl libmicrohttpd-dev curl \
  debhelper lintian mandoc librsvg2-bin \
  postgresql redis-server at sqlite3 python3 python3-psycopg2 python3-redis prometheus \
  chromium chromium-driver python3-pip gcc
STRICT = -Xswiftc -warnings-as-errors
BENCH_SCRATCH = .build-bench
BENCH_FLAGS = -c release --scratch-path $(BENCH_SCRATCH) $(STRICT)

.PHONY: all build deps test browser-test lint-binaries locale-table bench bench-peers bench-peers-check bench-fleet bench-fleet-check bench-webhooks bench-http webhooks-crash-test bench-figures fleet-test soak fuzz fuzz-check run clean format lint release install install-files uninstall install-check e2e \
  deb e2e-package hot-functions

all: build

# Python modules the tests need: the reference Varlink implementation, for interoperability;
# the reference verifiers of Standard Webhooks and of Svix, which check the webhooks' signatures;
# Selenium, which drives the browser of make browser-test.
PYTHON ?= python3
PIP_PACKAGES ?= varlink standardwebhooks svix selenium

# Installs the Debian packages named in APT_PACKAGES and the Python modules named in
# PIP_PACKAGES that are not installed yet. Debian's python3 is marked externally managed (PEP 668):
# its pip installs a module (into /usr/local, beside Debian's own) only when told so, and an older
# pip ignores the variable that tells it.
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
	@for mod in $(PIP_PACKAGES); do \
	  $(PYTHON) -c "import $$mod" 2>/dev/null || { echo "installing Python module $$mod"; \
	    PIP_BREAK_SYSTEM_PACKAGES=1 $(PYTHON) -m pip install -q --disable-pip-version-check $$mod; } || exit 1; \
	done

build: deps
	$(SWIFT) build $(STRICT)

test: deps lint
	$(SWIFT) build --build-tests $(STRICT)
	$(SWIFT) test --skip-build
	$(MAKE) browser-test
	$(MAKE) fuzz-check
	$(MAKE) lint-binaries
	$(MAKE) bench-peers-check
	$(MAKE) fleet-test
	$(MAKE) webhooks-crash-test
	$(MAKE) bench-fleet-check
	$(MAKE) install-check
	$(MAKE) e2e
	$(MAKE) e2e-package

# The dashboard of the HTTP gateway in a real browser (Tests/browser/): Debian's chromium, headless,
# driven by Selenium through Debian's chromedriver, against the debug trialwatchd with 1,000 trials
# of three plans (also run as trialwatchctl and trialwatch-http); every page without a console
# error or a failed request, the figures those of trialwatchctl. A screenshot of each page in
# BROWSER_ARTIFACTS; BROWSER_ARGS="--seed N" draws the trials of a failed run again.
BROWSER_ARTIFACTS = .build/artifacts/browser
BROWSER_ARGS ?=
browser-test: deps
	$(SWIFT) build $(STRICT) --product trialwatchd
	$(PYTHON) Tests/browser/dashboard_test.py --daemon $$($(SWIFT) build --show-bin-path)/trialwatchd \
	  --scratch .build/browser-test --artifacts $(BROWSER_ARTIFACTS) $(BROWSER_ARGS)

# The sources swift-format keeps in shape (its rules: .swift-format).
FORMATTED = Package.swift Sources Tests FuzzTesting/Package.swift FuzzTesting/Sources

format:
	$(SWIFT) format --in-place --recursive --parallel $(FORMATTED)

# TrialCtl's table of date texts, generated from the ICU data of Foundation by
# Sources/trialwatch-locale-table and formatted (docs/trialwatchctl.md, "Dates"). It reads glibc's
# list of locales, /usr/share/i18n/SUPPORTED (Debian: locales).
LOCALE_TABLE = Sources/TrialCtl/Dates/LocaleTable.swift
locale-table:
	@$(MAKE) --no-print-directory deps APT_PACKAGES=locales PIP_PACKAGES=
	$(SWIFT) build $(STRICT) --product trialwatch-locale-table
	$$($(SWIFT) build --show-bin-path)/trialwatch-locale-table > $(LOCALE_TABLE).new \
	  || { rm -f $(LOCALE_TABLE).new; exit 1; }
	mv -f $(LOCALE_TABLE).new $(LOCALE_TABLE)
	$(SWIFT) format --in-place $(LOCALE_TABLE)

# The formatting, and no `import Foundation` in what ships (Tests/lint/foundation.sh).
lint:
	$(SWIFT) format lint --strict --recursive --parallel $(FORMATTED)
	Tests/lint/foundation.sh sources
	@# `Days` only where the seed means days (TrialPeriod, days left): at most 10 lines.
	@n=$$(grep -rw Days Sources | wc -l); [ $$n -le 10 ] \
	  || { echo "lint: Days on $$n lines of Sources/, at most 10 (the seed's days only):"; grep -rnw Days Sources; exit 1; }

# No symbol of Foundation proper or ICU in the release binary (nm; part of make test).
lint-binaries: release
	Tests/lint/foundation.sh $(RELEASE_BIN)/trialwatchd

# make bench, make bench-peers and make bench-http save what they print in BENCH_OUT, PEERS_OUT
# and HTTP_OUT, after `# bench-run` lines naming the command, the date and the commit, for make
# bench-figures; a failed run leaves the previous file. Their pipelines fail when the run fails
# (pipefail).
BENCH_OUT = $(BENCH_SCRATCH)/bench.out
PEERS_OUT = $(BENCH_SCRATCH)/peers.out
HTTP_OUT = $(BENCH_SCRATCH)/http.out
bench_run = { echo "\# bench-run command: $(1)"; echo "\# bench-run date: $$(date -u +%F)"; \
  commit=$$(git describe --always --dirty 2>/dev/null) && echo "\# bench-run commit: $$commit"; true; }
bench bench-peers bench-http: SHELL = /bin/bash
bench bench-peers bench-http: .SHELLFLAGS = -o pipefail -c

bench: deps release
	@$(MAKE) --no-print-directory deps APT_PACKAGES="valgrind python3" PIP_PACKAGES=
	$(SWIFT) build $(BENCH_FLAGS)
	{ $(call bench_run,make bench); \
	  TRIALWATCH_BENCH_DAEMON=$(RELEASE_BIN)/trialwatchd $(BENCH_SCRATCH)/release/trialwatch-bench \
	  $(if $(TRIALWATCH_BENCH_BASELINE_BENCH),&& bench/in-turns.sh $(BENCH_SCRATCH)/release/trialwatch-bench \
	    $(TRIALWATCH_BENCH_BASELINE_BENCH)) \
	  && bench/start-instructions.sh $(BENCH_SCRATCH)/release/trialwatch-bench $(RELEASE_BIN)/trialwatchd \
	    $(TRIALWATCH_BENCH_BASELINE_DAEMON) \
	  && bench/fire-instructions.sh $(RELEASE_BIN)/trialwatchd $(TRIALWATCH_BENCH_BASELINE_DAEMON) \
	  && $(FLEET_BENCH) && $(WEBHOOKS_BENCH) && $(HTTP_BENCH); } \
	  | tee $(BENCH_OUT).tmp
	mv -f $(BENCH_OUT).tmp $(BENCH_OUT)

# The peers harness runs on Debian's python3 (python3-psycopg2 and python3-redis are Debian
# packages), which need not be the python3 first on PATH. Its servers' files go under
# $(BENCH_SCRATCH)/peers; the systemd peer boots the container of make e2e there.
PEERS_PYTHON ?= /usr/bin/python3
PEERS_SCRATCH = $(BENCH_SCRATCH)/peers
# The trialwatchd measured is the shipped program, make release's.
bench-peers: deps release
	{ $(call bench_run,make bench-peers$(if $(PEERS_ONLY), PEERS_ONLY=$(PEERS_ONLY))); \
	  $(PEERS_PYTHON) bench/peers/peers.py --daemon $(RELEASE_BIN)/trialwatchd --scratch $(PEERS_SCRATCH); } \
	  | tee $(PEERS_OUT).tmp
	mv -f $(PEERS_OUT).tmp $(PEERS_OUT)

# The harness on tiny workloads, with the release build of make release (which make test
# makes anyway for install-check).
bench-peers-check: release
	bench/peers/check.sh $(PEERS_PYTHON) $(RELEASE_BIN)/trialwatchd $(BENCH_SCRATCH)/peers-check

# The fleet fault test (Tests/fleet/): three release trialwatchd nodes sharing a private
# PostgreSQL cluster, nodes killed, stopped and the cluster restarted during a minute of events;
# checks nothing is lost or taken twice and that failover happens within a bound that follows
# from the lease; prints the lateness, a figure of bench-fleet (2-3 minutes; root runs the
# cluster as nobody). Then the failover test: the same three nodes on a PostgreSQL primary and
# its streaming standby, the primary stopped (fast, then immediate) and the standby promoted
# under load, with synchronous replication (checked: nothing acknowledged lost, firing again
# within 5 s of the promotion) and asynchronous (measured: what a failover loses); about 2
# minutes. First the unit tests of their analysis. FLEET_ARGS=--quick runs the small variants,
# FLEET_ARGS=--keep leaves the scratch folders.
# FLEET_DAEMON=Tests/fleet/standin_node.py checks the fault test's harness itself with its
# stand-in node (which does not follow a promoted standby: the failover test is left out).
FLEET_ARGS ?=
FLEET_DAEMON ?= $(RELEASE_BIN)/trialwatchd
fleet-test: release
	$(PEERS_PYTHON) -m unittest discover -s Tests/fleet
	$(PEERS_PYTHON) Tests/fleet/fleet_test.py --daemon $(FLEET_DAEMON) --scratch $(BENCH_SCRATCH)/fleet $(FLEET_ARGS)
	$(if $(findstring standin_node,$(FLEET_DAEMON)),,$(PEERS_PYTHON) Tests/fleet/failover_test.py \
	  --daemon $(FLEET_DAEMON) --scratch $(BENCH_SCRATCH)/fleet $(FLEET_ARGS))

# The fleet figures (bench/fleet/): three release trialwatchd nodes on a private PostgreSQL against
# a db-scheduler-style poller (three workers polling every 1 s, then every 10 s) on the same
# cluster and workloads: burst rate, lateness (also beside two busy loops), failover after
# SIGKILL and SIGSTOP, statements per second idle and loaded (per node, per event), events
# taken twice under faults, GetStatus with 1,000,000 trials (about 10 minutes; root runs the
# cluster as nobody). Every figure as `name: value unit`.
FLEET_BENCH_SCRATCH = $(BENCH_SCRATCH)/fleet-bench
FLEET_BENCH = $(PEERS_PYTHON) bench/fleet/fleet_bench.py --daemon $(RELEASE_BIN)/trialwatchd --scratch $(FLEET_BENCH_SCRATCH)
bench-fleet: release
	$(FLEET_BENCH)

# The webhooks' crash test (Tests/webhooks/crash_test.py): the release trialwatchd and its sender
# each SIGKILLed 20 times at random while 1,000 events are taken and delivered to three endpoints
# (one failing 30 % of its requests); every event reaches every endpoint that wants it, verified
# by the reference libraries, none lost (about a minute). CRASH_ARGS="--trials 100 --kills 5"
# runs a small one.
CRASH_ARGS ?=
webhooks-crash-test: release
	$(PYTHON) Tests/webhooks/crash_test.py --daemon $(RELEASE_BIN)/trialwatchd \
	  --scratch $(BENCH_SCRATCH)/webhooks-crash $(CRASH_ARGS)

# The webhook figures (bench/webhooks/): the release trialwatchd and its sender delivering to a
# local receiver (throughput from a backlog, due-to-delivery latency, the sender idle), beside a
# consumer running curl per event in the same run (about a minute). Every figure as
# `name: value unit`.
WEBHOOKS_BENCH = $(PEERS_PYTHON) bench/webhooks/webhooks_bench.py --daemon $(RELEASE_BIN)/trialwatchd \
  --scratch $(BENCH_SCRATCH)/webhooks
bench-webhooks: release
	$(WEBHOOKS_BENCH)

# The HTTP gateway's figures (bench/http/): StartTrial through trialwatch-http against the same
# call straight to the control socket, in turns; the token check with a known and an unknown
# token; the gateway's idle size and wake-ups (about a minute). Then the dashboard's pages,
# GET / and GET /cohorts, against a daemon holding 1,000,000 trials of three plans, its store
# written first by trialwatch-bench populate-plans (a minute or two). make bench runs them last.
HTTP_BENCH = $(PEERS_PYTHON) bench/http/http_bench.py --daemon $(RELEASE_BIN)/trialwatchd \
  --scratch $(BENCH_SCRATCH)/http \
  && $(PEERS_PYTHON) bench/http/dashboard_bench.py --daemon $(RELEASE_BIN)/trialwatchd \
  --bench $(BENCH_SCRATCH)/release/trialwatch-bench --scratch $(BENCH_SCRATCH)/dashboard
bench-http: release
	$(SWIFT) build $(BENCH_FLAGS) --product trialwatch-bench
	{ $(call bench_run,make bench-http); $(HTTP_BENCH); } | tee $(HTTP_OUT).tmp
	mv -f $(HTTP_OUT).tmp $(HTTP_OUT)

# The same on small workloads (under 3 minutes), its output checked: every figure line present
# and parseable. First the unit tests of its pure parts.
bench-fleet-check: release
	$(PEERS_PYTHON) -m unittest discover -s bench/fleet
	@mkdir -p $(FLEET_BENCH_SCRATCH)-check
	$(PEERS_PYTHON) bench/fleet/fleet_bench.py --daemon $(RELEASE_BIN)/trialwatchd \
	  --scratch $(FLEET_BENCH_SCRATCH)-check --quick > $(FLEET_BENCH_SCRATCH)-check/figures.out
	@cat $(FLEET_BENCH_SCRATCH)-check/figures.out
	$(PEERS_PYTHON) bench/fleet/fleet_bench.py --check $(FLEET_BENCH_SCRATCH)-check/figures.out

# docs/benchmark-figures.md, generated by bench/figures.py from saved outputs: by default those
# make bench, make bench-peers and make bench-http left. BENCH_OUTPUT="FILE..." names others;
# BENCH_DATE= and BENCH_COMMIT= stand in where an output does not say when and from what it ran.
BENCH_OUTPUT ?= $(wildcard $(BENCH_OUT) $(PEERS_OUT) $(HTTP_OUT))
BENCH_FIGURES = docs/benchmark-figures.md
bench-figures:
	@test -n "$(strip $(BENCH_OUTPUT))" || { echo "error: no $(BENCH_OUT), $(PEERS_OUT) nor $(HTTP_OUT): run" \
	  "make bench, make bench-peers or make bench-http, or name an output with BENCH_OUTPUT=FILE" >&2; exit 1; }
	$(PYTHON) bench/figures.py --output $(BENCH_FIGURES) $(if $(BENCH_DATE),--date '$(BENCH_DATE)') \
	  $(if $(BENCH_COMMIT),--commit '$(BENCH_COMMIT)') $(BENCH_OUTPUT)

soak: deps
	$(SWIFT) build --build-tests $(STRICT)
	TRIALWATCH_CRASH_KILLS=$${TRIALWATCH_CRASH_KILLS:-1000} $(SWIFT) test --skip-build --filter CrashTests

# The fuzz targets under libFuzzer and AddressSanitizer (FuzzTesting/fuzz.sh), FUZZ_SECONDS each.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?=
fuzz: deps
	SWIFT="$(SWIFT)" FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_TARGETS="$(FUZZ_TARGETS)" FuzzTesting/fuzz.sh

# Every fuzz target briefly under AddressSanitizer and LeakSanitizer: its committed inputs, then
# FUZZ_CHECK_RUNS more from seed 1 (part of make test).
FUZZ_CHECK_RUNS ?= 2000
fuzz-check: deps
	SWIFT="$(SWIFT)" FUZZ_CHECK_RUNS=$(FUZZ_CHECK_RUNS) FUZZ_TARGETS="$(FUZZ_TARGETS)" FuzzTesting/fuzz.sh --check

# The embedded default: no root, no setup. State and socket under ./.trialwatch/, logs on
# stderr, Ctrl-C stops cleanly. In another terminal:
#   TRIALWATCH_SOCKET=.trialwatch/io.trialwatch .build/debug/trialwatchctl daemon-status
RUN_DIR = .trialwatch
run: deps
	$(SWIFT) build $(STRICT) --product trialwatchd
	$(SWIFT) build $(STRICT) --product trialwatchctl
	@mkdir -p $(RUN_DIR)
	@echo "trialwatchd: state in $(RUN_DIR)/state, socket $(RUN_DIR)/io.trialwatch (Ctrl-C stops)"
	.build/debug/trialwatchd --config etc/trialwatch.conf --state-dir $(RUN_DIR)/state --socket $(RUN_DIR)/io.trialwatch

clean:
	rm -rf .build FuzzTesting/.build $(BENCH_SCRATCH) $(RELEASE_SCRATCH) $(E2E_SCRATCH) $(DEB_OUT)
	debian/rules clean

# --- Release build and installation -----------------------------------------------------------
#
# One program with the Swift runtime linked statically, trialwatchctl a link to it that runs
# the client, trialwatch-webhooks one that runs the webhooks' sender and trialwatch-http one that
# runs the HTTP gateway (docs/footprint.md): an installed host needs only glibc (2.36 or
# later), libstdc++ and libgcc, libsystemd and liblmdb (Debian: libc6, libstdc++6, libgcc-s1,
# libsystemd0, liblmdb0); libpq (libpq5) is opened by a fleet node only, libunistring
# (libunistring2) at the first subject that is not ASCII folded for a plan granted once, libcurl
# and libcrypto (libcurl4, libssl3) by the webhooks' sender, libmicrohttpd and libcrypto
# (libmicrohttpd12, libssl3) by the gateway. Linked
# by the toolchain's lld: relocations packed (DT_RELR), no symbol exported, bound at start (-z now).
RELEASE_SCRATCH = .build-release
RELEASE_BIN = $(RELEASE_SCRATCH)/release
PREFIX ?= /usr
DESTDIR ?=
BINDIR = $(PREFIX)/bin
# trialwatch-webhooks and trialwatch-http, run by their units, not by people: links to
# ../../bin/trialwatchd.
LIBEXECDIR = $(PREFIX)/libexec/trialwatch
UNITDIR = $(PREFIX)/lib/systemd/system
SYSUSERSDIR = $(PREFIX)/lib/sysusers.d
CATALOGDIR = $(PREFIX)/lib/systemd/catalog
DOCDIR = $(PREFIX)/share/doc/trialwatch
MANDIR = $(PREFIX)/share/man
BASHCOMPLETIONDIR = $(PREFIX)/share/bash-completion/completions
ZSHCOMPLETIONDIR = $(PREFIX)/share/zsh/vendor-completions
FISHCOMPLETIONDIR = $(PREFIX)/share/fish/vendor_completions.d
CONFDIR = /etc/trialwatch
# The units; trialwatch-consumer@.service is a template, started per consumer;
# trialwatch-metrics.timer (with its service) writes the metrics for the node exporter, once
# enabled; trialwatch-webhooks.service posts the webhooks (enabled by the package, it starts only
# once an endpoint is configured); trialwatch-http.socket (with its service) is the HTTP gateway,
# once enabled (not by the package: a port opened by an install would be a surprise).
UNITS = trialwatch.service trialwatch.socket trialwatch-report.socket trialwatch-consumer@.service \
  trialwatch-metrics.service trialwatch-metrics.timer trialwatch-webhooks.service \
  trialwatch-http.socket trialwatch-http.service
INSTALL ?= install

# Generated by make release, from the release binaries' own definitions: the man pages
# trialwatchctl.1, trialwatch.conf.5, trialwatchd.8, trialwatch-webhooks.8 and trialwatch-http.8
# (trialwatch-manual),
# and the completion scripts (`--generate-completion-script`) as COMMAND.bash, COMMAND.zsh and
# COMMAND.fish.
MAN_PAGES = trialwatchctl.1 trialwatch.conf.5 trialwatchd.8 trialwatch-webhooks.8 trialwatch-http.8
MAN_SCRATCH = $(RELEASE_SCRATCH)/man
COMPLETION_SCRATCH = $(RELEASE_SCRATCH)/completions
COMPLETED = trialwatchctl trialwatchd
# The pages' date: that of SOURCE_DATE_EPOCH when set (reproducible builds), else of the last
# commit, else today.
MAN_DATE ?= $(shell if [ -n "$$SOURCE_DATE_EPOCH" ]; then date -u -d "@$$SOURCE_DATE_EPOCH" +%F; \
  else git log -1 --format=%cs 2>/dev/null | grep . || date -u +%F; fi)

# Linked with -z now (with lld's default -z relro: full RELRO), as Debian's hardening flags ask
# of packaged binaries; without the $ORIGIN run path SwiftPM adds (the runtime is linked in).
# The functions that run in a typical life are placed together, in the order of
# release/hot-functions.txt (make hot-functions), each of the program's own in a section of its own.
HOT_FUNCTIONS = release/hot-functions.txt
RELEASE_LINK = -Xswiftc -use-ld=lld -Xlinker -z -Xlinker now -Xlinker -z -Xlinker pack-relative-relocs \
  -Xlinker --no-export-dynamic \
  -Xlinker --symbol-ordering-file=$(abspath $(HOT_FUNCTIONS)) -Xlinker --no-warn-symbol-ordering
RELEASE_FLAGS = -c release --static-swift-stdlib --disable-local-rpath --scratch-path $(RELEASE_SCRATCH) $(STRICT) \
  -Xswiftc -Xfrontend -Xswiftc -function-sections $(RELEASE_LINK)
release: deps
	@# A changed list of hot functions alone does not make SwiftPM link again.
	@if [ $(HOT_FUNCTIONS) -nt $(RELEASE_BIN)/trialwatchd ]; then rm -f $(RELEASE_BIN)/trialwatchd; fi
	$(SWIFT) build $(RELEASE_FLAGS) --product trialwatchd
	ln -sfn trialwatchd $(RELEASE_BIN)/trialwatchctl
	ln -sfn trialwatchd $(RELEASE_BIN)/trialwatch-webhooks
	ln -sfn trialwatchd $(RELEASE_BIN)/trialwatch-http
	$(SWIFT) build $(RELEASE_FLAGS) --product trialwatch-manual
	rm -rf $(MAN_SCRATCH) $(COMPLETION_SCRATCH)
	$(RELEASE_BIN)/trialwatch-manual --date $(MAN_DATE) --output $(MAN_SCRATCH)
	mkdir -p $(COMPLETION_SCRATCH)
	for command in $(COMPLETED); do for shell in bash zsh fish; do \
	  $(RELEASE_BIN)/$$command --generate-completion-script $$shell > $(COMPLETION_SCRATCH)/$$command.$$shell \
	  || exit 1; \
	done; done
	# bash sources completions: no #! line (lintian's bash-completion-with-hashbang).
	sed -i '1{/^#!/d;}' $(COMPLETION_SCRATCH)/*.bash

install: release
	@$(MAKE) --no-print-directory install-files

# Installs the release build made before (no build). The units and the man pages name
# /usr/bin/trialwatchd, /usr/libexec/trialwatch, /usr/lib/... and /usr/share/doc/trialwatch;
# another PREFIX is substituted as they are installed. The configuration is installed only where there is none. Pages are
# installed uncompressed (packaging compresses them).
MAN_PATHS = -e 's|/usr/lib/systemd/system/|$(UNITDIR)/|g' -e 's|/usr/lib/sysusers.d/|$(SYSUSERSDIR)/|g' \
  -e 's|/usr/libexec/trialwatch/|$(LIBEXECDIR)/|g' \
  -e 's|/usr/lib/systemd/catalog/|$(CATALOGDIR)/|g' -e 's|/usr/share/doc/trialwatch/|$(DOCDIR)/|g'
install-files:
	@test -x $(RELEASE_BIN)/trialwatchd -a -x $(RELEASE_BIN)/trialwatchctl || \
	  { echo "error: no release build in $(RELEASE_BIN); run make release (or make install)" >&2; exit 1; }
	@for page in $(MAN_PAGES); do test -f $(MAN_SCRATCH)/$$page || \
	  { echo "error: no $(MAN_SCRATCH)/$$page; run make release (or make install)" >&2; exit 1; }; done
	$(INSTALL) -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBEXECDIR) $(DESTDIR)$(UNITDIR) $(DESTDIR)$(SYSUSERSDIR) \
	  $(DESTDIR)$(CATALOGDIR) $(DESTDIR)$(DOCDIR)/examples $(DESTDIR)$(DOCDIR)/examples/plans \
	  $(DESTDIR)$(DOCDIR)/examples/webhooks $(DESTDIR)$(DOCDIR)/docs \
	  $(DESTDIR)$(CONFDIR)/trialwatch.conf.d $(DESTDIR)$(CONFDIR)/consumers $(DESTDIR)$(CONFDIR)/plans \
	  $(DESTDIR)$(CONFDIR)/webhooks $(DESTDIR)$(CONFDIR)/http \
	  $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man8 \
	  $(DESTDIR)$(BASHCOMPLETIONDIR) $(DESTDIR)$(ZSHCOMPLETIONDIR) $(DESTDIR)$(FISHCOMPLETIONDIR)
	$(INSTALL) -m 0755 $(RELEASE_BIN)/trialwatchd $(DESTDIR)$(BINDIR)/
	ln -sfn trialwatchd $(DESTDIR)$(BINDIR)/trialwatchctl
	ln -sfn ../../bin/trialwatchd $(DESTDIR)$(LIBEXECDIR)/trialwatch-webhooks
	ln -sfn ../../bin/trialwatchd $(DESTDIR)$(LIBEXECDIR)/trialwatch-http
	for unit in $(UNITS); do \
	  sed -e 's|/usr/bin/trialwatchd|$(BINDIR)/trialwatchd|g' -e 's|/usr/bin/trialwatchctl|$(BINDIR)/trialwatchctl|g' \
	      -e 's|/usr/libexec/trialwatch/|$(LIBEXECDIR)/|g' \
	      -e 's|/usr/share/doc/trialwatch/|$(DOCDIR)/|g' systemd/$$unit > $(DESTDIR)$(UNITDIR)/$$unit.tmp && \
	  chmod 0644 $(DESTDIR)$(UNITDIR)/$$unit.tmp && mv -f $(DESTDIR)$(UNITDIR)/$$unit.tmp $(DESTDIR)$(UNITDIR)/$$unit \
	  || exit 1; \
	done
	$(INSTALL) -m 0644 systemd/trialwatch.sysusers $(DESTDIR)$(SYSUSERSDIR)/trialwatch.conf
	sed -e 's|/usr/share/doc/trialwatch/|$(DOCDIR)/|g' systemd/trialwatch.catalog > $(DESTDIR)$(CATALOGDIR)/trialwatch.catalog
	chmod 0644 $(DESTDIR)$(CATALOGDIR)/trialwatch.catalog
	# The overview and the documents by topic, whose links are relative (docs/*.md).
	$(INSTALL) -m 0644 README.md $(DESTDIR)$(DOCDIR)/
	$(INSTALL) -m 0644 docs/*.md $(DESTDIR)$(DOCDIR)/docs/
	$(INSTALL) -m 0644 etc/consumer.conf $(DESTDIR)$(DOCDIR)/examples/consumer.conf
	# Sample plans, not active as installed: the operator copies one to
	# $(CONFDIR)/plans/NAME.conf (trialwatch.conf(5)).
	$(INSTALL) -m 0644 etc/plans/*.conf $(DESTDIR)$(DOCDIR)/examples/plans/
	# A sample webhook endpoint, not active as installed: the operator copies it to
	# $(CONFDIR)/webhooks/NAME.conf (trialwatch.conf(5)).
	$(INSTALL) -m 0644 etc/webhooks/*.conf $(DESTDIR)$(DOCDIR)/examples/webhooks/
	# Alerting rules on the metrics, for the operator to copy into Prometheus' rule files
	# (docs/monitoring.md).
	$(INSTALL) -m 0644 etc/prometheus/trialwatch-alerts.yml $(DESTDIR)$(DOCDIR)/examples/
	# The fleet drop-in is not active as installed: the operator copies it to
	# /etc/systemd/system/trialwatch.service.d/fleet.conf (docs/fleet.md).
	sed -e 's|/usr/share/doc/trialwatch/|$(DOCDIR)/|g' systemd/trialwatch-fleet.conf \
	  > $(DESTDIR)$(DOCDIR)/examples/trialwatch-fleet.conf
	chmod 0644 $(DESTDIR)$(DOCDIR)/examples/trialwatch-fleet.conf
	for page in $(MAN_PAGES); do \
	  target=$(DESTDIR)$(MANDIR)/man$${page##*.}/$$page; \
	  sed $(MAN_PATHS) $(MAN_SCRATCH)/$$page > $$target.tmp && chmod 0644 $$target.tmp && mv -f $$target.tmp $$target \
	  || exit 1; \
	done
	for command in $(COMPLETED); do \
	  $(INSTALL) -m 0644 $(COMPLETION_SCRATCH)/$$command.bash $(DESTDIR)$(BASHCOMPLETIONDIR)/$$command && \
	  $(INSTALL) -m 0644 $(COMPLETION_SCRATCH)/$$command.zsh $(DESTDIR)$(ZSHCOMPLETIONDIR)/_$$command && \
	  $(INSTALL) -m 0644 $(COMPLETION_SCRATCH)/$$command.fish $(DESTDIR)$(FISHCOMPLETIONDIR)/$$command.fish \
	  || exit 1; \
	done
	@if [ -e $(DESTDIR)$(CONFDIR)/trialwatch.conf ]; then \
	  echo "keeping the existing $(DESTDIR)$(CONFDIR)/trialwatch.conf"; \
	else \
	  echo "$(INSTALL) -m 0644 etc/trialwatch.conf $(DESTDIR)$(CONFDIR)/trialwatch.conf"; \
	  $(INSTALL) -m 0644 etc/trialwatch.conf $(DESTDIR)$(CONFDIR)/trialwatch.conf; \
	fi
	@if [ -z "$(DESTDIR)" ]; then \
	  echo "systemd-sysusers $(SYSUSERSDIR)/trialwatch.conf"; \
	  systemd-sysusers $(SYSUSERSDIR)/trialwatch.conf || echo "warning: systemd-sysusers failed; create the users by hand" >&2; \
	  echo "journalctl --update-catalog"; \
	  journalctl --update-catalog || echo "warning: journalctl --update-catalog failed" >&2; \
	  if [ -d /run/systemd/system ]; then echo "systemctl daemon-reload"; systemctl daemon-reload || true; fi; \
	fi

# Stops and disables the units first (only when DESTDIR is empty), and removes the metrics file
# the timer wrote, which the node exporter would go on serving. The configuration stays when it
# differs from the sample; the store in /var/lib/trialwatch and the users always stay.
METRICS_FILE = /var/lib/prometheus/node-exporter/trialwatch.prom
uninstall:
	@if [ -z "$(DESTDIR)" ] && [ -d /run/systemd/system ]; then \
	  echo "systemctl disable --now trialwatch-http.socket trialwatch-http.service trialwatch-webhooks.service" \
	    "trialwatch-metrics.timer trialwatch-report.socket trialwatch.socket trialwatch.service"; \
	  systemctl disable --now trialwatch-http.socket trialwatch-http.service trialwatch-webhooks.service \
	    trialwatch-metrics.timer trialwatch-report.socket trialwatch.socket trialwatch.service 2>/dev/null || true; \
	  echo "systemctl stop trialwatch-metrics.service 'trialwatch-consumer@*.service'"; \
	  systemctl stop trialwatch-metrics.service 'trialwatch-consumer@*.service' 2>/dev/null || true; \
	fi
	@if [ -z "$(DESTDIR)" ] && [ -e $(METRICS_FILE) ]; then echo "rm -f $(METRICS_FILE)"; rm -f $(METRICS_FILE); fi
	rm -f $(DESTDIR)$(BINDIR)/trialwatchd $(DESTDIR)$(BINDIR)/trialwatchctl $(DESTDIR)$(LIBEXECDIR)/trialwatch-webhooks \
	  $(DESTDIR)$(LIBEXECDIR)/trialwatch-http \
	  $(addprefix $(DESTDIR)$(UNITDIR)/,$(UNITS)) \
	  $(DESTDIR)$(SYSUSERSDIR)/trialwatch.conf $(DESTDIR)$(CATALOGDIR)/trialwatch.catalog
	for page in $(MAN_PAGES); do rm -f $(DESTDIR)$(MANDIR)/man$${page##*.}/$$page; done
	for command in $(COMPLETED); do \
	  rm -f $(DESTDIR)$(BASHCOMPLETIONDIR)/$$command $(DESTDIR)$(ZSHCOMPLETIONDIR)/_$$command \
	    $(DESTDIR)$(FISHCOMPLETIONDIR)/$$command.fish; \
	done
	rm -rf $(DESTDIR)$(DOCDIR)
	@rmdir $(DESTDIR)$(LIBEXECDIR) 2>/dev/null || true
	@if cmp -s etc/trialwatch.conf $(DESTDIR)$(CONFDIR)/trialwatch.conf; then \
	  echo "rm -f $(DESTDIR)$(CONFDIR)/trialwatch.conf"; rm -f $(DESTDIR)$(CONFDIR)/trialwatch.conf; \
	elif [ -e $(DESTDIR)$(CONFDIR)/trialwatch.conf ]; then \
	  echo "keeping $(DESTDIR)$(CONFDIR)/trialwatch.conf: it was changed"; \
	fi
	@rmdir $(DESTDIR)$(CONFDIR)/trialwatch.conf.d $(DESTDIR)$(CONFDIR)/consumers $(DESTDIR)$(CONFDIR)/plans \
	  $(DESTDIR)$(CONFDIR)/webhooks $(DESTDIR)$(CONFDIR)/http $(DESTDIR)$(CONFDIR) 2>/dev/null || true
	@if [ -z "$(DESTDIR)" ]; then \
	  journalctl --update-catalog 2>/dev/null || true; \
	  if [ -d /run/systemd/system ]; then echo "systemctl daemon-reload"; systemctl daemon-reload || true; fi; \
	fi

# --- Installation and end-to-end tests ----------------------------------------------------------

# Installs into a temporary DESTDIR (twice, and with another PREFIX) and checks the tree.
hot-functions: release
	@$(MAKE) --no-print-directory deps APT_PACKAGES="valgrind python3" PIP_PACKAGES=
	release/hot-functions.sh $(RELEASE_BIN)/trialwatchd $(HOT_FUNCTIONS)
	$(MAKE) --no-print-directory release

install-check: release
	Tests/e2e/install-check.sh

# Boots systemd 252 in a container with trialwatch installed, and tests the service in it
# (Tests/e2e/e2e.sh, its checks in the steps of Tests/e2e/steps/, run in order).
# Needs root and systemd-nspawn; otherwise prints SKIP and succeeds. The root file system is
# cached under .cache/; the container's journal is saved under $(E2E_SCRATCH)/.
E2E_SCRATCH = .build-e2e
e2e: release
	E2E_SCRATCH=$(E2E_SCRATCH) Tests/e2e/e2e.sh

# --- The Debian package -----------------------------------------------------------------------
#
# debian/rules (debhelper) packages what install-files installs, with the maintainer scripts
# of a systemd service; docs/install.md says what they do. The version is debian/changelog's, which
# must be the daemon's own; DEB_VERSION=V overrides it (the upgrade test builds a lower one).
DEB_OUT = .build-deb
DEB_VERSION ?=
deb: release
	@changelog=$$(dpkg-parsechangelog -S Version); \
	  daemon=$$($(RELEASE_BIN)/trialwatchd --version); \
	  [ "$$changelog" = "$$daemon" ] || \
	  { echo "error: debian/changelog says $$changelog, trialwatchd --version says $$daemon" >&2; exit 1; }
	debian/rules clean
	DEB_OUT=$(abspath $(DEB_OUT)) DEB_VERSION=$(DEB_VERSION) debian/rules binary
	debian/rules clean
	@deb=$(DEB_OUT)/trialwatch_$(or $(DEB_VERSION),$$(dpkg-parsechangelog -S Version))_$$(dpkg-architecture -qDEB_HOST_ARCH).deb; \
	  echo "lintian $$deb"; \
	  lintian --fail-on error --info $$deb || exit 1; \
	  echo "built $$deb"

# Boots systemd in a container and installs the package with apt: install, upgrade from a
# lower version, remove, purge (root; else SKIP). Builds both packages first.
e2e-package: deb
	$(MAKE) --no-print-directory deb DEB_VERSION=0.0.1
	E2E_SCRATCH=$(E2E_SCRATCH)-package DEB_OUT=$(DEB_OUT) Tests/e2e/package.sh
