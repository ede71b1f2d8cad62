#!/usr/bin/env bash
# End-to-end test of the installed service under a real systemd.
#
# Boots Debian 12 (systemd 252) in a systemd-nspawn container, installs trialwatch into it
# with `make install-files DESTDIR=...`, and checks the service as an operator would meet it:
# Type=notify start-up, live STATUS=, plans read at reload, journal entries of reminders and
# expiries (exactly once, with their MESSAGE_ID, fields, labels, plan and catalog text), reload,
# catch-up after downtime, the watchdog, socket activation, who may read and who may change
# trials, a consumer's unit running a command per event, a burst of expiries beyond journald's
# rate limit (every one in the journal, once), the metrics (systemd-report's socket, the file
# for Debian's node exporter and what it serves, promtool's checks), webhooks delivered by their
# sender's unit, the HTTP gateway started by its socket, and a clean stop.
#
# This driver boots the container and installs; the checks are the steps in steps/, sourced in
# the order of their numbers, one after the other in the same container and shell (a step
# counts on what the ones before it left: the users of 05-access.sh, the running service):
#   01-installation  the units verify, their exposure, the users, the catalog, enabling (the
#                    report socket with the service, not the metrics timer nor the gateway)
#   02-start         active only after READY=1, STATUS=, the limit on open files
#   03-events        plans read at reload; reminders and expiries in the journal once, with
#                    fields, labels, plan and catalog text
#   04-reload        systemctl reload applies a changed configuration
#   05-access        who may read (trialwatch) and who may change (trialwatch-admin)
#   06-catch-up      a trial that ended while the service was stopped expires once, late
#   07-watchdog      a hung daemon is killed by the watchdog and restarted, nothing lost
#   08-socket        socket activation, and the daemon binding the socket itself
#   09-consumer      trialwatch-consumer@.service runs a command per event (TRIAL_PLAN too)
#   10-burst         a burst of expiries beyond journald's rate limit, every one in the journal
#   11-metrics       io.systemd.Metrics on the report socket and the control socket, who may
#                    read them; trialwatch-metrics.timer, disabled as installed, writes the
#                    node exporter's file; the node exporter serves it; promtool checks both
#   12-webhooks      trialwatch-webhooks.service delivers a real expiry to an endpoint on
#                    loopback, signed; its exposure; stopped in a burst and started again,
#                    nothing lost
#   13-http          trialwatch-http.socket, disabled as installed, started: the first request
#                    starts the gateway, in a network namespace of its own; a change token may
#                    start a trial, a read token may not; /metrics passes promtool; the change
#                    journaled with its token's name; Prometheus scrapes /metrics with the
#                    read token (up, samples stored), a wrong token's job is down with a 401
#   14-variants      a plan with Grace= and two variants: 2,000 trials converted at true rates
#                    of 5 % and 10 % (a fixed seed); stats --variants gives intervals holding
#                    them; each event in the journal with TRIAL_VARIANT=
#   15-stop          a clean stop; over the whole journal no event twice, no error
# The helpers the steps share are in service.sh (the service, its journal, its callers),
# container.sh (the container) and checks.sh (the checks and their count).
#
# Prints `PASS: <name>` or `FAIL: <name>: <why>` for every check, then `N passed, N failed`;
# exits non-zero when a check failed. Without root, or where systemd-nspawn cannot run,
# prints a SKIP line and exits 0.
#
# Run it with `make e2e` (it needs the release build). The Debian root file system is made
# once with debootstrap and cached in .cache/; the container's journal is saved under the
# work folder ($E2E_SCRATCH, default .build-e2e) as journal.txt and journal.json.
#
# Environment: E2E_SCRATCH (work folder), E2E_MIRROR (Debian mirror; default: the first
# bookworm entry of the host's apt sources), E2E_KEEP=1 (keep the container's root file
# system), E2E_VERBOSE=1 (echo every command run in the container), E2E_BURST=N (trials in the
# burst, default 40000), E2E_BURST_UNPACED=1 (turn the daemon's pacing off for the burst, to
# see what journald drops without it: the burst check then fails).

set -uo pipefail

cd "$(dirname "$0")/../.." || exit 1
TEST=e2e PURPOSE="test the service"
NAME=trialwatch-e2e SCRATCH=${E2E_SCRATCH:-.build-e2e}
# shellcheck source=container.sh
. Tests/e2e/container.sh
# shellcheck source=service.sh
. Tests/e2e/service.sh
BIN=$REPO/.build-release/release

if [ ! -x "$BIN/trialwatchd" ] || [ ! -x "$BIN/trialwatchctl" ]; then
  abort "release build" "no binaries in $BIN; run \`make e2e\`, which builds them"
fi

# A fresh copy for every run, with trialwatch installed by the Makefile.
container_root
if make -C "$REPO" --no-print-directory -s install-files DESTDIR="$ROOT" > "$SCRATCH/install.log" 2>&1; then
  pass "make install into the container's root"
else
  cat "$SCRATCH/install.log"
  abort "make install into the container's root" "make install-files DESTDIR=$ROOT failed"
fi

container_boot

for STEP in "$REPO"/Tests/e2e/steps/[0-9][0-9]-*.sh; do
  # shellcheck source=/dev/null
  . "$STEP"
done
