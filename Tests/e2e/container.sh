#!/usr/bin/env bash
# Shared by e2e.sh and package.sh (sourced): Debian 12 (systemd 252) booted in a systemd-nspawn
# container. Sourcing it checks the preconditions (root, cgroups, python3, systemd-nspawn and
# debootstrap, installed with apt-get when missing; else SKIP) and makes the root file system
# once with debootstrap, cached in .cache/. Then the caller calls `container_root` (a fresh
# copy in $ROOT, which it may install into), then `container_boot`; `ct`/`ctt` run commands
# inside. On exit the journal is saved under $SCRATCH, the container stopped, and the summary
# of the checks printed.
#
# The caller runs it from the checkout, which becomes REPO, and sets SCRATCH (the work folder,
# made here and made absolute), NAME (the machine name), and TEST and PURPOSE for the SKIP line
# without root. Sourcing it sources checks.sh, and sets JOURNAL (journal.py) and START_NS.
# Environment: E2E_MIRROR (Debian mirror; default: the first bookworm entry of the host's apt
# sources), E2E_KEEP=1 (keep the root file system), E2E_VERBOSE=1 (echo every command run
# inside).

if [ "$(id -u)" -ne 0 ]; then
  echo "SKIP: ${TEST:-e2e}: needs root (systemd-nspawn); run as root to ${PURPOSE:-boot the container}"
  exit 0
fi
REPO=$PWD
mkdir -p "$SCRATCH" || exit 1
SCRATCH=$(cd "$SCRATCH" && pwd)
# shellcheck disable=SC2034 # for the caller
JOURNAL=$REPO/Tests/e2e/journal.py
START_NS=$(date +%s%N)
# shellcheck source=checks.sh
. "$REPO/Tests/e2e/checks.sh"

CACHE=$REPO/.cache
SUITE=bookworm
# systemd booted with D-Bus, the libraries trialwatchd needs (libcurl and libcrypto for the
# webhooks' sender, libmicrohttpd and libcrypto for the HTTP gateway), and Debian's node exporter for the metrics step (its textfile collector
# reads what trialwatch-metrics.timer writes; installed, it runs at boot as on a host). A changed
# list makes a new root file system (the cache's name).
PACKAGES=systemd,systemd-sysv,dbus,procps,liblmdb0,libpq5,libunistring2,libcurl4,libssl3,libmicrohttpd12,prometheus-node-exporter
ROOT=$SCRATCH/root
NSPAWN_PID=
CPID=
CGROUPS=()
SKIPPING=

note() { echo "e2e: $*"; }
skip() {
  echo "SKIP: e2e: $*"
  SKIPPING=1
  exit 0
}
# Ends the run early when the container cannot be used at all.
abort() {
  fail "$1" "$2"
  exit 1
}
elapsed() { echo $((($(date +%s%N) - START_NS) / 1000000000)); }

# poll SECONDS COMMAND...: runs COMMAND every 0.2 s ($POLL_INTERVAL s when set) until it
# succeeds or SECONDS have passed.
poll() {
  local deadline=$(($(date +%s%N) + $1 * 1000000000))
  shift
  while :; do
    "$@" && return 0
    [ "$(date +%s%N)" -ge "$deadline" ] && return 1
    sleep "${POLL_INTERVAL:-0.2}"
  done
}

# ctt SECONDS COMMAND...: runs COMMAND inside the container, killed after SECONDS.
ctt() {
  local limit=$1
  shift
  [ "${E2E_VERBOSE:-}" = 1 ] && echo "e2e: # $*" >&2
  timeout -k 5 "$limit" nsenter --target "$CPID" --all \
    env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 TERM=dumb SYSTEMD_PAGER= SYSTEMD_COLORS=0 "$@"
}
# ct COMMAND...: the same with a 30 s limit.
ct() { ctt 30 "$@"; }

# --- Cleaning up, whatever happens -----------------------------------------------------------

remove_cgroups() {
  local dir
  for dir in "${CGROUPS[@]}"; do
    [ -d "$dir" ] && find "$dir" -depth -type d -exec rmdir {} \; 2> /dev/null
  done
}

save_journal() {
  [ -n "$CPID" ] && [ -d "/proc/$CPID" ] || return
  ct journalctl -b --no-pager -o short-precise > "$SCRATCH/journal.txt" 2>&1
  ct journalctl -b --no-pager -o json > "$SCRATCH/journal.json" 2>&1
  ct journalctl -b --no-pager -o short-precise -u trialwatch.service -u trialwatch.socket \
    -u trialwatch-report.socket -u trialwatch-metrics.service > "$SCRATCH/trialwatch.txt" 2>&1
}

stop_container() {
  [ -n "$NSPAWN_PID" ] || return
  if kill -0 "$NSPAWN_PID" 2> /dev/null && [ -n "$CPID" ]; then
    ctt 10 systemctl poweroff --no-block > /dev/null 2>&1
    poll 20 eval '! kill -0 "$NSPAWN_PID" 2> /dev/null'
  fi
  # A SIGTERM in the first second of boot can be lost: retry, then kill the container's init.
  local _
  for _ in 1 2 3 4 5; do
    kill -0 "$NSPAWN_PID" 2> /dev/null || break
    kill -TERM "$NSPAWN_PID" 2> /dev/null
    poll 3 eval '! kill -0 "$NSPAWN_PID" 2> /dev/null'
  done
  if kill -0 "$NSPAWN_PID" 2> /dev/null; then
    [ -n "$CPID" ] && kill -KILL "$CPID" 2> /dev/null
    kill -KILL "$NSPAWN_PID" 2> /dev/null
  fi
  wait "$NSPAWN_PID" 2> /dev/null
  NSPAWN_PID=
}

cleanup() {
  local status=$?
  trap - EXIT INT TERM
  if [ -n "$SKIPPING" ]; then
    remove_cgroups
    exit 0
  fi
  if [ "$status" -eq 130 ] || [ "$status" -eq 143 ]; then note "interrupted; stopping the container"; fi
  save_journal
  stop_container
  remove_cgroups
  rm -rf --one-file-system "/run/systemd/nspawn/propagate/$NAME" 2> /dev/null
  if [ "$FAILED" -gt 0 ] || [ "$status" -ne 0 ]; then
    if [ -s "$SCRATCH/trialwatch.txt" ]; then
      echo "e2e: last lines of the units' journal ($SCRATCH/trialwatch.txt; all: $SCRATCH/journal.txt):"
      grep -v 'Bus private-bus-connection\|bus object\|private connection\|Got message type\|Sent message type' \
        "$SCRATCH/trialwatch.txt" | tail -n 60
    elif [ -s "$SCRATCH/console.log" ]; then
      echo "e2e: last lines of the container's console ($SCRATCH/console.log):"
      tail -n 40 "$SCRATCH/console.log"
    fi
  fi
  if [ "${E2E_KEEP:-}" != 1 ]; then rm -rf --one-file-system "$ROOT"; fi
  note "took $(elapsed) s"
  summary
  if [ "$FAILED" -gt 0 ] && [ "$status" -eq 0 ]; then status=1; fi
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# --- Preconditions --------------------------------------------------------------------------

# One run at a time per work folder (the container's name and root are fixed).
exec 9> "$SCRATCH/lock"
flock -n 9 || abort "e2e" "another run is using $SCRATCH"

[ -d /sys/fs/cgroup ] || skip "no /sys/fs/cgroup: systemd-nspawn cannot run here"
command -v python3 > /dev/null || skip "needs python3 for the journal checks"
if ! command -v systemd-nspawn > /dev/null || ! command -v debootstrap > /dev/null; then
  note "installing debootstrap and systemd-container"
  { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap systemd-container; } \
    > "$SCRATCH/apt.log" 2>&1 \
    || skip "systemd-nspawn and debootstrap are missing and apt-get could not install them (see $SCRATCH/apt.log)"
fi

# --- The root file system, made once and cached ---------------------------------------------

# The first entry of the host's apt sources (one-line or deb822 format) for SUITE.
debian_mirror() {
  if [ -n "${E2E_MIRROR:-}" ]; then
    echo "$E2E_MIRROR"
    return
  fi
  python3 - "$SUITE" << 'EOF'
import glob, sys
suite = sys.argv[1]
def one_line(path):
    for line in open(path, errors="replace"):
        words = line.split("#", 1)[0].split()
        if not words or words[0] != "deb":
            continue
        words = words[1:]
        if words and words[0].startswith("["):
            while words and not words[0].endswith("]"):
                words = words[1:]
            words = words[1:]
        if len(words) >= 2 and words[1] == suite:
            return words[0]
def deb822(path):
    for stanza in open(path, errors="replace").read().split("\n\n"):
        fields = {}
        for line in stanza.splitlines():
            if line.startswith("#") or ":" not in line or line[0].isspace():
                continue
            key, value = line.split(":", 1)
            fields[key.strip().lower()] = value.split()
        if fields.get("enabled", ["yes"])[0].lower() == "no":
            continue
        if "deb" in fields.get("types", []) and suite in fields.get("suites", []) and fields.get("uris"):
            return fields["uris"][0]
paths = ["/etc/apt/sources.list"] + sorted(glob.glob("/etc/apt/sources.list.d/*.list"))
found = None
for path in paths:
    try:
        found = found or one_line(path)
    except OSError:
        pass
for path in sorted(glob.glob("/etc/apt/sources.list.d/*.sources")):
    try:
        found = found or deb822(path)
    except OSError:
        pass
print(found or "http://deb.debian.org/debian")
EOF
}

TARBALL=$CACHE/e2e-rootfs-$SUITE-$(echo "$PACKAGES" | sha1sum | cut -c1-8).tar
if [ ! -s "$TARBALL" ]; then
  MIRROR=$(debian_mirror)
  note "making the $SUITE root file system with debootstrap from $MIRROR (about a minute, once)"
  mkdir -p "$CACHE"
  rm -rf "$SCRATCH/debootstrap"
  if ! debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$SCRATCH/debootstrap" "$MIRROR" \
    > "$SCRATCH/debootstrap.log" 2>&1; then
    tail -n 20 "$SCRATCH/debootstrap.log"
    rm -rf "$SCRATCH/debootstrap"
    abort "root file system" "debootstrap failed (log: $SCRATCH/debootstrap.log)"
  fi
  rm -rf "$SCRATCH/debootstrap/var/cache/apt/archives/"*.deb
  if ! tar -C "$SCRATCH/debootstrap" -cf "$TARBALL.tmp" . || ! mv -f "$TARBALL.tmp" "$TARBALL"; then
    abort "root file system" "cannot write $TARBALL"
  fi
  rm -rf "$SCRATCH/debootstrap"
fi

# A fresh copy of the cached root file system in $ROOT.
container_root() {
  rm -rf "$ROOT"
  mkdir -p "$ROOT"
  tar -C "$ROOT" -xf "$TARBALL" || abort "root file system" "cannot extract $TARBALL"
}

# --- Booting the container ------------------------------------------------------------------

# Boots systemd in $ROOT and waits until it is running (or degraded).
container_boot() {
  # nspawn runs in cgroup folders of its own, removed afterwards.
  CGROUP_NAME=$NAME-$$
  if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
    CGROUPS=("/sys/fs/cgroup/$CGROUP_NAME") # unified hierarchy only
  else
    [ -d /sys/fs/cgroup/systemd ] && CGROUPS+=("/sys/fs/cgroup/systemd/$CGROUP_NAME")
    [ -d /sys/fs/cgroup/unified ] && CGROUPS+=("/sys/fs/cgroup/unified/$CGROUP_NAME")
  fi
  [ ${#CGROUPS[@]} -gt 0 ] || skip "no usable cgroup hierarchy under /sys/fs/cgroup"

  # Runs COMMAND... with its process moved into the cgroup folders first.
  in_cgroups() {
    bash -c 'for dir in $CGROUP_DIRS; do echo $$ > "$dir/cgroup.procs" || exit 97; done; exec "$@"' _ "$@"
  }

  NSPAWN_ARGS=(--quiet --directory="$ROOT" --register=no --keep-unit --private-network --link-journal=no
    --machine="$NAME")

  for dir in "${CGROUPS[@]}"; do
    mkdir -p "$dir" || skip "cannot create the cgroup folder $dir"
  done
  export CGROUP_DIRS="${CGROUPS[*]}"

  # Can nspawn run here at all (privileges, cgroups)? A short non-booting run says.
  if ! in_cgroups timeout 60 systemd-nspawn "${NSPAWN_ARGS[@]}" --machine="$NAME-probe" /bin/true \
    > "$SCRATCH/probe.log" 2>&1; then
    skip "systemd-nspawn cannot run here: $(tail -n 1 "$SCRATCH/probe.log")"
  fi

  note "booting systemd in the container"
  rm -f "$SCRATCH/nspawn.pid"
  setsid bash -c 'echo $$ > "$0"; for dir in $CGROUP_DIRS; do echo $$ > "$dir/cgroup.procs" || exit 97; done
    exec systemd-nspawn "$@"' "$SCRATCH/nspawn.pid" "${NSPAWN_ARGS[@]}" --boot --console=read-only \
    > "$SCRATCH/console.log" 2>&1 < /dev/null &
  poll 10 test -s "$SCRATCH/nspawn.pid" || abort "container boots" "systemd-nspawn did not start"
  NSPAWN_PID=$(cat "$SCRATCH/nspawn.pid")

  # The container's init: the child of nspawn that is PID 1 in its own namespace.
  find_init() {
    local child
    for child in $(cat /proc/"$NSPAWN_PID"/task/*/children 2> /dev/null); do
      if grep -qE '^NSpid:.*[[:space:]]1$' "/proc/$child/status" 2> /dev/null; then
        CPID=$child
        return 0
      fi
    done
    return 1
  }
  poll 30 find_init || abort "container boots" "no init process under systemd-nspawn ($(tail -n 3 "$SCRATCH/console.log"))"
  # systemctl needs PID 1's private socket, made early in the boot.
  poll 60 ct test -S /run/systemd/private
  STATE=$(ctt 120 systemctl is-system-running --wait 2>&1)
  case "$STATE" in
    running) pass "container boots (systemd $(ct systemctl --version | head -n 1 | cut -d' ' -f2), $STATE)" ;;
    degraded) pass "container boots (degraded: $(ct systemctl --failed --plain --no-legend | cut -d' ' -f1 | tr '\n' ' '))" ;;
    *) abort "container boots" "is-system-running says: $STATE" ;;
  esac
}

# --- The metrics timer, in either test ------------------------------------------------------

# The node exporter's textfile folder (Debian's prometheus-node-exporter, in the container's
# root, makes it) and the file trialwatch-metrics.timer writes there.
TEXTFILES=/var/lib/prometheus/node-exporter
PROM=$TEXTFILES/trialwatch.prom

# enable_metrics_timer: systemctl enable --now trialwatch-metrics.timer, as the operator does;
# sets OUT and RC (its output and status) and ENABLED_NS (when it returned), and succeeds once
# $PROM holds the metrics, within 15 s. metrics_timer_failure: what went wrong when it did not.
enable_metrics_timer() {
  OUT=$(ct systemctl enable --now trialwatch-metrics.timer 2>&1)
  RC=$?
  ENABLED_NS=$(date +%s%N)
  [ $RC -eq 0 ] && poll 15 metrics_written
}
metrics_written() { ct grep -q '^trialwatch_build_info{' "$PROM" 2> /dev/null; }
metrics_timer_failure() {
  echo "enable: rc $RC $OUT; $(ct journalctl -u trialwatch-metrics.service --no-pager -n 5 2>&1 | tr '\n' ' ')"
}
