#!/usr/bin/env bash
# End-to-end test of the Debian package under a real systemd.
#
# Boots Debian 12 (systemd 252) in a systemd-nspawn container (container.sh) with nothing of
# trialwatch in it, and takes the package through its life as an operator would, with apt:
# install the previous version's package (built from this tree with a lower version, with
# trialwatchctl a program of its own as the packages before one program were), upgrade to this
# version's, remove, purge, and install again on the clean system. Checks that the
# service runs after each install, with its control and report sockets, and the metrics timer
# disabled; that the upgrade restarts it and keeps every trial and the
# local configuration, that a backup taken beside the running service restores, that the
# packaged metrics timer, once enabled, writes the node exporter's file, that remove stops it
# all and removes that file and keeps the store, and that purge removes the
# store, the configuration and the user's files (and leaves files the operator added).
#
# Prints `PASS: <name>` or `FAIL: <name>: <why>` for every check, then `N passed, N failed`;
# exits non-zero when a check failed. Without root, or where systemd-nspawn cannot run,
# prints a SKIP line and exits 0.
#
# Run it with `make e2e-package` (it builds both packages). Environment: E2E_SCRATCH (work
# folder, default .build-e2e-package), DEB_OUT (where the packages are, default .build-deb),
# OLD_VERSION (the lower version, default 0.0.1), and those container.sh reads.

set -uo pipefail

cd "$(dirname "$0")/../.." || exit 1
TEST=e2e-package PURPOSE="test the package"
NAME=trialwatch-package SCRATCH=${E2E_SCRATCH:-.build-e2e-package}
# shellcheck source=container.sh
. Tests/e2e/container.sh
DEB_OUT=${DEB_OUT:-.build-deb}
ARCH=$(dpkg-architecture -qDEB_HOST_ARCH)
VERSION=$(dpkg-parsechangelog -S Version)
OLD_VERSION=${OLD_VERSION:-0.0.1}
NEW_DEB=trialwatch_${VERSION}_${ARCH}.deb
OLD_DEB=trialwatch_${OLD_VERSION}_${ARCH}.deb

for deb in "$NEW_DEB" "$OLD_DEB"; do
  [ -s "$DEB_OUT/$deb" ] || abort "packages" "no $DEB_OUT/$deb; run \`make e2e-package\`, which builds it"
done

# The previous package in the previous layout: packages up to 25 November 2026 installed
# trialwatchctl as a program of its own, not as a link to trialwatchd. The old package gets a
# copy of the program in its place, so that the upgrade replaces a file with the link.
rm -rf "$SCRATCH/old-deb"
mkdir -p "$SCRATCH/old-deb"
dpkg-deb -R "$DEB_OUT/$OLD_DEB" "$SCRATCH/old-deb/tree" || abort "packages" "cannot unpack $OLD_DEB"
rm -f "$SCRATCH/old-deb/tree/usr/bin/trialwatchctl"
cp "$SCRATCH/old-deb/tree/usr/bin/trialwatchd" "$SCRATCH/old-deb/tree/usr/bin/trialwatchctl"
(cd "$SCRATCH/old-deb/tree" && md5sum usr/bin/trialwatchctl) >> "$SCRATCH/old-deb/tree/DEBIAN/md5sums"
dpkg-deb --root-owner-group -Zxz -b "$SCRATCH/old-deb/tree" "$SCRATCH/old-deb/$OLD_DEB" > /dev/null \
  || abort "packages" "cannot pack $OLD_DEB in the previous layout"

container_root
mkdir -p "$ROOT/root/packages"
cp "$DEB_OUT/$NEW_DEB" "$SCRATCH/old-deb/$OLD_DEB" "$ROOT/root/packages/" || abort "packages" "cannot copy them in"
container_boot

# apt_get ARGS...: apt-get in the container, as an operator runs it (no questions asked);
# the output goes to $SCRATCH/apt.txt.
apt_get() {
  echo "# apt-get $*" >> "$SCRATCH/apt.txt"
  ctt 120 sh -c 'cd /root/packages && DEBIAN_FRONTEND=noninteractive apt-get -y -q "$@"' _ "$@" \
    >> "$SCRATCH/apt.txt" 2>&1
}
apt_tail() { tail -n 8 "$SCRATCH/apt.txt" | tr '\n' ' '; }
show() { ct systemctl show -P "$1" trialwatch.service; }
installed_version() { ct dpkg-query -W -f='${Status} ${Version}' trialwatch 2> /dev/null; }
states() { ct systemctl is-active trialwatch.socket trialwatch-report.socket trialwatch.service | tr '\n' ' '; }
enabled() { ct systemctl is-enabled trialwatch.socket trialwatch-report.socket trialwatch.service 2>&1 | tr '\n' ' '; }
# The metrics timer: enabled, running (the file it writes for the node exporter is $PROM).
timer() { echo "$(ct systemctl is-enabled trialwatch-metrics.timer 2>&1) $(ct systemctl is-active trialwatch-metrics.timer)"; }
# The HTTP gateway's socket: enabled, listening (an install opens no port).
gateway() { echo "$(ct systemctl is-enabled trialwatch-http.socket 2>&1) $(ct systemctl is-active trialwatch-http.socket)"; }
# A trial's id by its subject, asked of the daemon.
trial_id() { ct trialwatchctl status "$1" --json | python3 "$JOURNAL" get trial.id; }

# The checks after every install: the version is in place, the sockets and the service are
# enabled and running (Type=notify: active means READY=1), the socket answers; the metrics
# timer is neither enabled nor started, and has written nothing; nor is the HTTP gateway's socket.
check_installed() {
  local version=$1 what=$2
  local status
  status=$(installed_version)
  if [ "$status" = "install ok installed $version" ] && [ "$(states)" = "active active active " ] \
    && [ "$(enabled)" = "enabled enabled enabled " ] && ct trialwatchctl daemon-status > /dev/null 2>&1 \
    && [ "$(timer)" = "disabled inactive" ] && ! ct test -e "$PROM" && [ "$(gateway)" = "disabled inactive" ]; then
    pass "$what: trialwatch $version installed, sockets and service enabled and running, the metrics timer and the HTTP gateway's socket not"
  else
    fail "$what: trialwatch $version installed, sockets and service enabled and running, the metrics timer and the HTTP gateway's socket not" \
      "dpkg: $status; active: $(states); enabled: $(enabled); timer: $(timer); gateway's socket: $(gateway); $(apt_tail)"
  fi
}

# --- Install (the previous version) ---------------------------------------------------------

if apt_get install "./$OLD_DEB"; then
  pass "apt install ./$OLD_DEB"
else
  fail "apt install ./$OLD_DEB" "$(apt_tail)"
fi
if ct test -f /usr/bin/trialwatchctl -a ! -L /usr/bin/trialwatchctl; then
  pass "install: $OLD_VERSION's trialwatchctl is a program of its own (the previous layout)"
else
  fail "install: $OLD_VERSION's trialwatchctl is a program of its own" "$(ct ls -l /usr/bin/trialwatchctl 2>&1)"
fi
check_installed "$OLD_VERSION" "install"

if ct getent passwd trialwatch > /dev/null && ct getent group trialwatch-admin > /dev/null \
  && [ "$(ct stat -c '%U %a' /var/lib/trialwatch)" = "trialwatch 700" ]; then
  pass "install: systemd-sysusers made the user and groups; the store is the user's, mode 0700"
else
  fail "install: systemd-sysusers made the user and groups; the store is the user's, mode 0700" \
    "$(ct getent passwd trialwatch) $(ct stat -c '%U %a' /var/lib/trialwatch 2>&1)"
fi

# systemd's trigger on /usr/lib/systemd/catalog ran journalctl --update-catalog.
# (Captured first: grep -q leaves early, and under pipefail journalctl's SIGPIPE would fail it.)
CATALOG=$(ct journalctl --list-catalog 2> /dev/null)
if grep -q 'e0431c29206b4f89b9db88d7e38907bc' <<< "$CATALOG"; then
  pass "install: the journal catalog knows trialwatch's messages"
else
  fail "install: the journal catalog knows trialwatch's messages" "no e0431c29... in journalctl --list-catalog"
fi

CONFFILES=$(ct dpkg-query -W -f='${Conffiles}' trialwatch)
if grep -q '^ /etc/trialwatch/trialwatch.conf ' <<< "$CONFFILES"; then
  pass "install: /etc/trialwatch/trialwatch.conf is a conffile"
else
  fail "install: /etc/trialwatch/trialwatch.conf is a conffile" "conffiles: $(echo "$CONFFILES" | tr '\n' ' ')"
fi

DOCS="/usr/share/man/man1/trialwatchctl.1.gz /usr/share/man/man5/trialwatch.conf.5.gz
  /usr/share/man/man8/trialwatchd.8.gz /usr/share/bash-completion/completions/trialwatchctl
  /usr/share/zsh/vendor-completions/_trialwatchctl /usr/share/fish/vendor_completions.d/trialwatchctl.fish"
MISSING=$(for file in $DOCS; do ct test -s "$file" || echo "$file"; done)
if [ -z "$MISSING" ]; then
  pass "install: the man pages and the bash, zsh and fish completions are where man and the shells look"
else
  fail "install: the man pages and the bash, zsh and fish completions are where man and the shells look" \
    "missing: $(echo "$MISSING" | tr '\n' ' ')"
fi

# The sample plans are documents, installed uncompressed to be copied; /etc/trialwatch/plans is
# there for the operator's plans, and empty.
PLANS=$(ct ls -A /usr/share/doc/trialwatch/examples/plans 2>&1 | tr '\n' ' ')
if [ "$PLANS" = "enterprise.conf pro.conf " ] && ct test -d /etc/trialwatch/plans \
  && [ -z "$(ct ls -A /etc/trialwatch/plans)" ] && ! grep -q '/plans/' <<< "$CONFFILES"; then
  pass "install: the sample plans in /usr/share/doc/trialwatch/examples/plans/, /etc/trialwatch/plans empty"
else
  fail "install: the sample plans in /usr/share/doc/trialwatch/examples/plans/, /etc/trialwatch/plans empty" \
    "samples: $PLANS; /etc/trialwatch/plans: $(ct ls -A /etc/trialwatch/plans 2>&1 | tr '\n' ' ')"
fi
# Likewise the sample webhook endpoint: no endpoint is active as installed.
HOOKS=$(ct ls -A /usr/share/doc/trialwatch/examples/webhooks 2>&1 | tr '\n' ' ')
if [ "$HOOKS" = "billing.conf " ] && ct test -d /etc/trialwatch/webhooks \
  && [ -z "$(ct ls -A /etc/trialwatch/webhooks)" ] && ! grep -q '/webhooks/' <<< "$CONFFILES"; then
  pass "install: the sample endpoint in /usr/share/doc/trialwatch/examples/webhooks/, /etc/trialwatch/webhooks empty"
else
  fail "install: the sample endpoint in /usr/share/doc/trialwatch/examples/webhooks/, /etc/trialwatch/webhooks empty" \
    "samples: $HOOKS; /etc/trialwatch/webhooks: $(ct ls -A /etc/trialwatch/webhooks 2>&1 | tr '\n' ' ')"
fi

# --- Upgrade: restarted, every trial and the local configuration kept -----------------------

SUBJECTS="pkg-a pkg-b pkg-c"
for subject in $SUBJECTS; do ct trialwatchctl start "$subject" --duration 30d > /dev/null; done
IDS=$(for subject in $SUBJECTS; do trial_id "$subject"; done | tr '\n' ' ')
ct sh -c 'printf "[Trials]\nDefaultLength=9d\n" > /etc/trialwatch/trialwatch.conf.d/local.conf'
ct cp /usr/share/doc/trialwatch/examples/plans/pro.conf /etc/trialwatch/plans/pro.conf
OLD_PID=$(show MainPID)

if apt_get install "./$NEW_DEB"; then
  pass "apt install ./$NEW_DEB (upgrade from $OLD_VERSION)"
else
  fail "apt install ./$NEW_DEB (upgrade from $OLD_VERSION)" "$(apt_tail)"
fi
check_installed "$VERSION" "upgrade"
LINK=$(ct readlink /usr/bin/trialwatchctl)
DAEMON_STATUS=$(ct trialwatchctl daemon-status 2>&1)
if [ "$LINK" = trialwatchd ] && echo "$DAEMON_STATUS" | grep -q "$VERSION"; then
  pass "upgrade: the program trialwatchctl of $OLD_VERSION replaced by a link to trialwatchd, which runs the client"
else
  fail "upgrade: trialwatchctl replaced by a link to trialwatchd" \
    "link: ${LINK:-none}; daemon-status: $(echo "$DAEMON_STATUS" | head -n 3 | tr '\n' ' ')"
fi
NEW_PID=$(show MainPID)
if [ -n "$OLD_PID" ] && [ "$OLD_PID" != 0 ] && [ -n "$NEW_PID" ] && [ "$NEW_PID" != 0 ] \
  && [ "$OLD_PID" != "$NEW_PID" ]; then
  pass "upgrade: the service was restarted (PID $OLD_PID, then $NEW_PID)"
else
  fail "upgrade: the service was restarted" "PID before $OLD_PID, after $NEW_PID"
fi
AFTER=$(for subject in $SUBJECTS; do trial_id "$subject"; done | tr '\n' ' ')
if [ -n "$IDS" ] && [ "$IDS" = "$AFTER" ] && [ "$(echo "$IDS" | wc -w)" = 3 ]; then
  pass "upgrade: every trial kept ($IDS)"
else
  fail "upgrade: every trial kept" "before: $IDS; after: $AFTER"
fi
DAYS=$(ct trialwatchctl start pkg-d --json | python3 "$JOURNAL" get trial.daysLeft)
if [ -n "$(ct cat /etc/trialwatch/trialwatch.conf.d/local.conf 2> /dev/null)" ] \
  && awk -v d="${DAYS:-0}" 'BEGIN { exit !(d > 8.99 && d <= 9) }'; then
  pass "upgrade: the local drop-in configuration kept and applied (DefaultLength=9d)"
else
  fail "upgrade: the local drop-in configuration kept and applied" "a new trial's days left: ${DAYS:-none}"
fi
PLAN=$(ct trialwatchctl start pkg-pro --plan pro --json)
DAYS=$(python3 "$JOURNAL" get trial.daysLeft <<< "$PLAN")
if [ "$(python3 "$JOURNAL" get trial.plan <<< "$PLAN")" = pro ] \
  && awk -v d="${DAYS:-0}" 'BEGIN { exit !(d > 13.99 && d <= 14) }'; then
  pass "upgrade: the operator's plan kept and applied (pro, the sample: 14 days)"
else
  fail "upgrade: the operator's plan kept and applied" "trialwatchctl start --plan pro: $(echo "$PLAN" | tr '\n' ' ')"
fi

# --- Backup, verify and restore as an operator runs them --------------------------------------

OUT=$(ct trialwatchd --backup /root/trials.backup 2>&1)
RC=$?
if [ $RC -eq 0 ] && ct test -s /root/trials.backup && [ "$(show ActiveState)" = active ]; then
  pass "trialwatchd --backup beside the running service ($(echo "$OUT" | tail -n 1))"
else
  fail "trialwatchd --backup beside the running service" "exit $RC: $(echo "$OUT" | tr '\n' ' ')"
fi
OUT=$(ct trialwatchd --verify-store 2>&1)
RC=$?
if [ $RC -eq 0 ]; then
  pass "trialwatchd --verify-store beside the running service ($(echo "$OUT" | tail -n 1))"
else
  fail "trialwatchd --verify-store beside the running service" "exit $RC: $(echo "$OUT" | tr '\n' ' ')"
fi
OUT=$(ct trialwatchd --restore /root/trials.backup 2>&1)
RC=$?
if [ $RC -eq 1 ] && grep -q "stop" <<< "$OUT" && [ "$(show ActiveState)" = active ]; then
  pass "trialwatchd --restore is refused while the service runs (exit 1)"
else
  fail "trialwatchd --restore is refused while the service runs" "exit $RC: $(echo "$OUT" | tr '\n' ' ')"
fi
ct trialwatchctl start pkg-after-backup > /dev/null
# A pause is logged at once: a cursor handed out after the backup was taken.
ct trialwatchctl pause pkg-after-backup > /dev/null
AFTER_BACKUP=$(ct trialwatchctl event-log --json | python3 "$JOURNAL" get log.last)
ct systemctl stop trialwatch.socket trialwatch-report.socket trialwatch.service
OUT=$(ct trialwatchd --restore /root/trials.backup 2>&1)
RC=$?
ct systemctl start trialwatch.service
OWNERS=$(ct find /var/lib/trialwatch -mindepth 1 ! -user trialwatch)
RESTORED=$(for subject in $SUBJECTS; do trial_id "$subject"; done | tr '\n' ' ')
if [ $RC -eq 0 ] && [ "$RESTORED" = "$IDS" ] && ! ct trialwatchctl status pkg-after-backup > /dev/null 2>&1 \
  && [ -z "$OWNERS" ]; then
  pass "trialwatchd --restore with the service stopped: the backup's trials back, the later one gone, the files the user's"
else
  fail "trialwatchd --restore with the service stopped" \
    "exit $RC: $(echo "$OUT" | tr '\n' ' '); trials: $RESTORED; not the user's: $OWNERS"
fi

# The restored log is in a new generation: the cursor handed out after the backup is refused,
# naming where to resume, and watching from there works.
WATCHED=$(ct timeout 10 trialwatchctl watch --after "$AFTER_BACKUP" 2>&1)
WRC=$?
RESUME=$(grep -o -- '--after [0-9a-f]\{16\}-00000001' <<< "$WATCHED" | cut -d' ' -f2)
# Watching from the resume point goes on until stopped (timeout's 124).
ct timeout 3 trialwatchctl watch --after "${RESUME:-none}" > /dev/null 2>&1
RRC=$?
if [ $WRC -eq 1 ] && grep -q "earlier generation of the event log" <<< "$WATCHED" && [ $RRC -eq 124 ]; then
  pass "after the restore, a cursor of the log before ($AFTER_BACKUP) is refused; watching after $RESUME works"
else
  fail "after the restore, a cursor of the log before is refused" \
    "watch --after ${AFTER_BACKUP:-?}: exit $WRC: $(echo "$WATCHED" | tr '\n' ' ')"
fi

# --- The metrics timer, as the operator enables it --------------------------------------------

if enable_metrics_timer; then
  pass "the packaged trialwatch-metrics.timer, enabled, writes $PROM"
else
  fail "the packaged trialwatch-metrics.timer, enabled, writes $PROM" "$(metrics_timer_failure)"
fi

# --- Remove: stopped, the store and the configuration kept ----------------------------------

if apt_get remove trialwatch; then
  pass "apt remove trialwatch"
else
  fail "apt remove trialwatch" "$(apt_tail)"
fi
STATUS=$(installed_version)
ACTIVE=$(ct systemctl is-active trialwatch.service trialwatch.socket trialwatch-report.socket \
  trialwatch-metrics.timer | tr '\n' ' ')
if ! ct pgrep -x trialwatchd > /dev/null && ! ct test -e /usr/bin/trialwatchd \
  && [ "$ACTIVE" = "inactive inactive inactive inactive " ] && [ "${STATUS#deinstall ok config-files}" != "$STATUS" ]; then
  pass "remove: the daemon, its sockets and the metrics timer stopped, the binaries gone ($STATUS)"
else
  fail "remove: the daemon, its sockets and the metrics timer stopped, the binaries gone" \
    "dpkg: $STATUS; units: $ACTIVE; $(ct pgrep -a trialwatchd)"
fi
# Neither a socket in /run/systemd/report/ that refuses collectors, nor the last metrics for the
# node exporter to go on serving.
LEFT=$(ct ls -d /run/systemd/report/io.trialwatch "$PROM" 2>&1 | grep -v 'No such file')
if [ -z "$LEFT" ]; then
  pass "remove: the report socket and the node exporter's trialwatch.prom removed"
else
  fail "remove: the report socket and the node exporter's trialwatch.prom removed" "left: $(echo "$LEFT" | tr '\n' ' ')"
fi
if ct test -s /var/lib/trialwatch/data.mdb && ct test -e /etc/trialwatch/trialwatch.conf; then
  pass "remove: the store and the configuration kept"
else
  fail "remove: the store and the configuration kept" "$(ct ls -la /var/lib/trialwatch /etc/trialwatch 2>&1 | tr '\n' ' ')"
fi

# --- Purge: the store and the user's files removed ------------------------------------------

if apt_get purge trialwatch; then
  pass "apt purge trialwatch"
else
  fail "apt purge trialwatch" "$(apt_tail)"
fi
# The link the operator's enable of the metrics timer made goes too.
LEFT=$(ct sh -c 'ls -d /var/lib/trialwatch /run/trialwatch /etc/trialwatch/trialwatch.conf \
    /etc/systemd/system/timers.target.wants/trialwatch-metrics.timer 2> /dev/null
  find / -xdev -user trialwatch 2> /dev/null')
if [ -z "$LEFT" ] && [ -z "$(installed_version | grep ' installed')" ]; then
  pass "purge: the store, the configuration, the metrics timer's link and every file of the user trialwatch removed"
else
  fail "purge: the store, the configuration, the metrics timer's link and every file of the user trialwatch removed" \
    "left: $(echo "$LEFT" | tr '\n' ' ')"
fi
# A file the operator added is the operator's: dpkg leaves it, and its folder.
if ct test -s /etc/trialwatch/trialwatch.conf.d/local.conf && ct test -s /etc/trialwatch/plans/pro.conf; then
  pass "purge: the operator's own drop-in and plan kept"
else
  fail "purge: the operator's own drop-in and plan kept" \
    "$(ct ls /etc/trialwatch/trialwatch.conf.d/local.conf /etc/trialwatch/plans/pro.conf 2>&1 | tr '\n' ' ')"
fi
ct rm -rf /etc/trialwatch

# --- Install again on the clean system (this version) ---------------------------------------

if apt_get install "./$NEW_DEB"; then
  pass "apt install ./$NEW_DEB after the purge"
else
  fail "apt install ./$NEW_DEB after the purge" "$(apt_tail)"
fi
check_installed "$VERSION" "install after the purge"
COUNT=$(ct trialwatchctl daemon-status --json | python3 "$JOURNAL" get trials.active)
if [ "$COUNT" = 0 ]; then
  pass "install after the purge: a new, empty store"
else
  fail "install after the purge: a new, empty store" "active trials: ${COUNT:-unknown}"
fi
