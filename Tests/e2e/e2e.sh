#!/usr/bin/env bash
# End-to-end test of the installed service under a real systemd.
#
# Boots Debian 12 (systemd 252) in a systemd-nspawn container, installs trialwatch into it
# with `make install-files DESTDIR=...`, and checks the service as an operator would meet it:
# Type=notify start-up, live STATUS=, journal entries of reminders and expiries (exactly once,
# with their MESSAGE_ID, fields and catalog text), reload, catch-up after downtime, the
# watchdog, socket activation, who may read and who may change trials, a consumer's unit
# running a command per event, a burst of expiries beyond journald's rate limit (every one
# in the journal, once), and a clean stop.
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
if [ "$(id -u)" -ne 0 ]; then
  echo "SKIP: e2e: needs root (systemd-nspawn); run as root to test the service"
  exit 0
fi
REPO=$PWD
SCRATCH=${E2E_SCRATCH:-.build-e2e}
mkdir -p "$SCRATCH" || exit 1
SCRATCH=$(cd "$SCRATCH" && pwd)
NAME=trialwatch-e2e
JOURNAL=$REPO/Tests/e2e/journal.py
BURST_CLIENT=$REPO/Tests/e2e/burst.py
BIN=$REPO/.build-release/release

START_NS=$(date +%s%N)
# shellcheck source=checks.sh
. "$REPO/Tests/e2e/checks.sh"
# shellcheck source=container.sh
. "$REPO/Tests/e2e/container.sh"

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

# --- Installation in the container ----------------------------------------------------------

# Fetches the journal (JSON) into a file: jfetch FILE [journalctl arguments].
jfetch() {
  local file=$1
  shift
  # Two minutes: a whole journal of the burst's 40,000 entries, on a busy machine.
  ctt 120 journalctl --no-pager -o json "$@" > "$file" 2> /dev/null
}
J=$SCRATCH/j.json
# The journal's current end, to look only at what comes after (jfetch_after).
cursor_now() {
  jfetch "$J" -n 1 && python3 "$JOURNAL" cursor "$J"
}
# The entries of UNIT after CURSOR, as journalctl -u shows a unit's: jfetch_after FILE UNIT CURSOR.
# Not -u with --after-cursor: with a match, journalctl skips the first matching entry after a
# cursor whose own entry does not match (another unit's). The unit's are picked out here instead.
jfetch_after() {
  jfetch "$1" --after-cursor="$3" && python3 "$JOURNAL" unit "$1" "$2"
}

OUT=$(ct systemd-analyze verify trialwatch.service trialwatch.socket 2>&1)
if [ $? -eq 0 ] && [ -z "$OUT" ]; then
  pass "systemd-analyze verify is clean"
else
  fail "systemd-analyze verify is clean" "$(echo "$OUT" | tr '\n' ' ')"
fi

OUT=$(ct systemd-analyze security --offline=yes trialwatch.service 2>&1 | grep -o 'Overall exposure level.*')
SCORE=$(echo "$OUT" | sed -n 's/.*: \([0-9.]*\) .*/\1/p')
if [ -n "$SCORE" ] && awk -v s="$SCORE" 'BEGIN { exit !(s <= 1.0) }'; then
  pass "hardening: exposure $SCORE (at most 1.0)"
else
  fail "hardening: exposure at most 1.0" "${OUT:-no score}"
fi

# The same with the fleet drop-in applied (docs/fleet.md): the unit and the drop-in as
# installed, in a folder of their own, so that the running service stays single-host.
OUT=$(ct sh -c 'd=$(mktemp -d) && mkdir "$d/trialwatch.service.d" \
  && cp /usr/lib/systemd/system/trialwatch.service "$d/" \
  && cp /usr/share/doc/trialwatch/examples/trialwatch-fleet.conf "$d/trialwatch.service.d/fleet.conf" \
  && systemd-analyze security --offline=yes "$d/trialwatch.service"; rm -rf "$d"' 2>&1 \
  | grep -o 'Overall exposure level.*')
SCORE=$(echo "$OUT" | sed -n 's/.*: \([0-9.]*\) .*/\1/p')
if [ -n "$SCORE" ] && awk -v s="$SCORE" 'BEGIN { exit !(s <= 1.5) }'; then
  pass "hardening with the fleet drop-in: exposure $SCORE (at most 1.5)"
else
  fail "hardening with the fleet drop-in: exposure at most 1.5" "${OUT:-no score}"
fi

if ct getent passwd trialwatch > /dev/null && ct getent group trialwatch > /dev/null \
  && ct getent group trialwatch-admin > /dev/null; then
  pass "sysusers.d made user trialwatch and groups trialwatch, trialwatch-admin"
else
  fail "sysusers.d made user trialwatch and groups trialwatch, trialwatch-admin" \
    "$(ct getent passwd trialwatch; ct getent group trialwatch trialwatch-admin)"
fi

OUT=$(ct journalctl --update-catalog 2>&1) || fail "journalctl --update-catalog" "$OUT"
OUT=$(ct systemctl enable trialwatch.socket trialwatch.service 2>&1)
if [ $? -eq 0 ] && [ "$(ct systemctl is-enabled trialwatch.socket trialwatch.service | tr '\n' ' ')" = "enabled enabled " ]; then
  pass "systemctl enable trialwatch.socket trialwatch.service"
else
  fail "systemctl enable trialwatch.socket trialwatch.service" "$(echo "$OUT" | tr '\n' ' ')"
fi

# PID 1 logs every notification a service sends at debug level (READY=1, RELOADING=1,
# STOPPING=1): turned on for the checks that look for them.
pid1_debug() {
  local level=info
  [ "$1" = on ] && level=debug
  ct systemd-analyze log-level "$level" > /dev/null 2>&1 || note "cannot set PID 1's log level to $level"
}

show() { ct systemctl show -P "$1" trialwatch.service; }

# --- Start: active only after READY=1 -------------------------------------------------------

pid1_debug on
C=$(cursor_now)
OUT=$(ctt 60 systemctl start trialwatch.service 2>&1)
RC=$?
ACTIVE=$(show ActiveState)
PID=$(show MainPID)
if [ $RC -ne 0 ] || [ "$ACTIVE" != active ]; then
  fail "systemctl start waits for READY=1" "systemctl start: rc $RC $OUT; ActiveState=$ACTIVE"
else
  ready_logged() {
    jfetch_after "$J" trialwatch.service "$C" \
      && python3 "$JOURNAL" has "$J" "Started trialwatch.service"
  }
  poll 10 ready_logged
  if WHY=$(python3 "$JOURNAL" before "$J" "Got notification message from PID $PID \\(.*READY=1" \
    "Started trialwatch.service"); then
    pass "systemctl start waits for READY=1 (is-active: $(ct systemctl is-active trialwatch.service))"
  else
    fail "systemctl start waits for READY=1" "$WHY"
  fi
fi
pid1_debug off

status_text() { ct systemctl status trialwatch.service --no-pager 2> /dev/null | sed -n 's/^ *Status: //p'; }
OUT=$(status_text)
if grep -q '^"0 active trials' <<< "$OUT"; then
  pass "systemctl status shows STATUS= ($OUT)"
else
  fail "systemctl status shows STATUS=" "Status line: ${OUT:-none}"
fi

# systemd starts services with a soft limit of 1024 open files; the daemon raises it to the
# hard limit for MaxConnections=.
LIMITS=$(ct sh -c "grep 'Max open files' /proc/$(show MainPID)/limits")
SOFT=$(echo "$LIMITS" | awk '{print $4}')
HARD=$(echo "$LIMITS" | awk '{print $5}')
if [ -n "$SOFT" ] && [ "$SOFT" = "$HARD" ] && [ "$SOFT" != 1024 ]; then
  pass "the daemon raises its soft limit on open files to the hard one ($SOFT)"
else
  fail "the daemon raises its soft limit on open files to the hard one" "${LIMITS:-no limits}"
fi

# --- Trials whose events fall due in a few seconds ------------------------------------------

# start_trial SUBJECT ARGS...: starts a trial as root and prints its id.
start_trial() {
  local subject=$1
  shift
  ct trialwatchctl start "$subject" "$@" --json | python3 "$JOURNAL" get trial.id
}

A=$(start_trial e2e-alpha --duration 6s --reminders 3s)
B=$(start_trial e2e-beta --duration 8s --reminders 6s,3s)
if [ -n "$A" ] && [ -n "$B" ]; then
  pass "trialwatchctl start (trials $A, $B)"
else
  fail "trialwatchctl start" "no trial id in the reply ($(ct trialwatchctl start e2e-gamma --duration 1h 2>&1))"
fi

live_status() { grep -q '^"2 active trials; next: e2e-' <<< "$(status_text)"; }
if poll 5 live_status; then
  pass "systemctl status shows the live STATUS= ($(status_text))"
else
  fail "systemctl status shows the live STATUS=" "Status line: $(status_text)"
fi

SPECS=("$A:reminder" "$A:expiry" "$B:reminder" "$B:reminder" "$B:expiry")
events_there() {
  jfetch "$J" -u trialwatch.service && python3 "$JOURNAL" expect "$J" --wait "$@"
}
if poll 30 events_there "${SPECS[@]}"; then
  if WHY=$(python3 "$JOURNAL" expect "$J" "${SPECS[@]}"); then
    pass "journal: each reminder and expiry once, with MESSAGE_ID and fields"
  else
    fail "journal: each reminder and expiry once, with MESSAGE_ID and fields" "$(echo "$WHY" | tr '\n' ';')"
  fi
else
  fail "journal: each reminder and expiry once, with MESSAGE_ID and fields" \
    "not all 5 events within 30 s: $(python3 "$JOURNAL" expect "$J" "${SPECS[@]}" | tr '\n' ';')"
fi

OUT=$(ct journalctl -u trialwatch.service -x --no-pager TRIAL_ID="$A" 2>&1)
if grep -q "Subject: Trial e2e-alpha expired" <<< "$OUT" \
  && grep -q "Subject: Trial e2e-alpha reminder" <<< "$OUT" \
  && grep -q "Defined-By: trialwatch" <<< "$OUT"; then
  pass "journalctl -x shows the catalog text"
else
  fail "journalctl -x shows the catalog text" "$(echo "$OUT" | tail -n 5 | tr '\n' ' ')"
fi

# --- Reload ---------------------------------------------------------------------------------

PID=$(show MainPID)
BEFORE=$(ct trialwatchctl start e2e-reload-before --json | python3 "$JOURNAL" get trial.reminders)
ct sh -c 'mkdir -p /etc/trialwatch/trialwatch.conf.d &&
  printf "[Trials]\nDefaultReminders=2h, 1h\n" > /etc/trialwatch/trialwatch.conf.d/50-e2e.conf'
pid1_debug on
C=$(cursor_now)
OUT=$(ct systemctl reload trialwatch.service 2>&1)
RC=$?
# ExecReload= only sends SIGHUP; the daemon says RELOADING=1 ... READY=1 when done.
reloaded() {
  jfetch_after "$J" trialwatch.service "$C" && python3 "$JOURNAL" has "$J" "configuration reloaded" \
    && python3 "$JOURNAL" has "$J" "Got notification message from PID $PID \\(.*READY=1"
}
if [ $RC -ne 0 ]; then
  fail "systemctl reload applies a changed configuration" "systemctl reload: rc $RC $OUT"
elif ! poll 10 reloaded; then
  fail "systemctl reload applies a changed configuration" "no \"configuration reloaded\" and READY=1 within 10 s"
else
  AFTER=$(ct trialwatchctl start e2e-reload-after --json | python3 "$JOURNAL" get trial.reminders)
  if [ "$AFTER" = "2h,1h" ] && [ "$BEFORE" != "$AFTER" ] && [ "$(show MainPID)" = "$PID" ] \
    && python3 "$JOURNAL" has "$J" "Got notification message from PID $PID \\(.*RELOADING=1"; then
    pass "systemctl reload applies a changed configuration (reminders $BEFORE -> $AFTER, RELOADING=1 seen)"
  else
    fail "systemctl reload applies a changed configuration" \
      "reminders before $BEFORE, after $AFTER (expected 2h,1h); MainPID $PID -> $(show MainPID)"
  fi
fi
pid1_debug off
ct rm -f /etc/trialwatch/trialwatch.conf.d/50-e2e.conf

# --- Who may read, who may change -----------------------------------------------------------

ct useradd --system --no-create-home --groups trialwatch e2e-reader
ct useradd --system --no-create-home --groups trialwatch,trialwatch-admin e2e-admin
ct useradd --system --no-create-home e2e-outsider
as() {
  local user=$1
  shift
  ct runuser -u "$user" -- trialwatchctl "$@"
}

OUT=$( { as e2e-reader list && as e2e-reader status e2e-reload-after; } 2>&1)
if [ $? -eq 0 ]; then
  pass "a member of trialwatch may read (list, status)"
else
  fail "a member of trialwatch may read (list, status)" "$(echo "$OUT" | tr '\n' ' ')"
fi

OUT=$(as e2e-reader start e2e-by-reader --duration 1h 2>&1)
RC=$?
if [ $RC -ne 0 ] && grep -qi permission <<< "$OUT"; then
  pass "a member of trialwatch only is refused start (exit $RC: $OUT)"
else
  fail "a member of trialwatch only is refused start" \
    "exit $RC: $(echo "$OUT" | head -n 2 | tr '\n' ' ') (ControlGroup= default must be trialwatch-admin)"
fi

OUT=$(as e2e-admin start e2e-by-admin --duration 1h 2>&1)
if [ $? -eq 0 ]; then
  pass "a member of trialwatch and trialwatch-admin may start"
else
  fail "a member of trialwatch and trialwatch-admin may start" "$(echo "$OUT" | tr '\n' ' ')"
fi

OUT=$(as e2e-outsider list 2>&1)
RC=$?
if [ $RC -ne 0 ] && grep -qi permission <<< "$OUT"; then
  pass "a user outside the groups cannot connect (exit $RC)"
else
  fail "a user outside the groups cannot connect" "exit $RC: $(echo "$OUT" | tr '\n' ' ')"
fi

# --- Catch-up after downtime ----------------------------------------------------------------

REPLY=$(ct trialwatchctl start e2e-late --duration 3s --reminders none --json)
L=$(echo "$REPLY" | python3 "$JOURNAL" get trial.id)
ENDS=$(echo "$REPLY" | python3 "$JOURNAL" get trial.endsAt)
OUT=$(ct systemctl stop trialwatch.socket trialwatch.service 2>&1)
STATES=$(ct systemctl is-active trialwatch.socket trialwatch.service | tr '\n' ' ')
if [ -z "$L" ] || [ "$STATES" != "inactive inactive " ]; then
  fail "a trial that ended while stopped expires once, late" "trial ${L:-not started}; after stop: $STATES $OUT"
else
  # Wait until the trial's end is more than 2 s past (LateThreshold= is 1 s).
  END_NS=$(date -d "$ENDS" +%s%N)
  two_seconds_past() { [ "$(date +%s%N)" -gt $((END_NS + 2000000000)) ]; }
  poll 30 two_seconds_past
  OUT=$(ctt 60 systemctl start trialwatch.service 2>&1) || note "systemctl start: $OUT"
  late_there() { events_there "$L:expiry:late"; }
  poll 15 late_there
  if WHY=$(python3 "$JOURNAL" expect "$J" "$L:expiry:late"); then
    pass "a trial that ended while stopped expires once, late, on the next start (LATENESS_USEC)"
  else
    fail "a trial that ended while stopped expires once, late" "$(echo "$WHY" | tr '\n' ';')"
  fi
fi
if [ "$(ct systemctl is-active trialwatch.socket)" = active ]; then
  pass "starting the service starts trialwatch.socket too"
else
  fail "starting the service starts trialwatch.socket too" "trialwatch.socket: $(ct systemctl is-active trialwatch.socket)"
fi

# --- Watchdog -------------------------------------------------------------------------------

DROPIN=/run/systemd/system/trialwatch.service.d
ct sh -c "mkdir -p $DROPIN && printf '[Service]\nWatchdogSec=3s\nRestartSec=500ms\nLimitCORE=0\n' > $DROPIN/50-e2e-watchdog.conf"
ct systemctl daemon-reload
ctt 60 systemctl restart trialwatch.service
PID=$(show MainPID)
W0=$(start_trial e2e-wd0 --duration 2s --reminders none)
W1=$(start_trial e2e-wd1 --duration 10s --reminders 6s)
W2=$(start_trial e2e-wd2 --duration 6s --reminders none)
# Once the first expiry is in, freeze the daemon: its events at +4 s and +6 s fall due while
# it hangs or restarts, the last one at +10 s after.
poll 15 events_there "$W0:expiry"
C=$(cursor_now)
ct kill -STOP "$PID"
restarted() {
  local pid
  pid=$(show MainPID)
  [ "$pid" != 0 ] && [ "$pid" != "$PID" ] && [ "$(show ActiveState)" = active ]
}
watchdog_logged() {
  jfetch_after "$J" trialwatch.service "$C" && python3 "$JOURNAL" has "$J" "Watchdog timeout"
}
if poll 30 restarted; then
  if poll 10 watchdog_logged; then
    pass "a hung daemon is killed by the watchdog and restarted (MainPID $PID -> $(show MainPID))"
  else
    fail "a hung daemon is killed by the watchdog and restarted" "restarted, but no \"Watchdog timeout\" in the journal"
  fi
else
  fail "a hung daemon is killed by the watchdog and restarted" \
    "MainPID $(show MainPID), ActiveState $(show ActiveState) 30 s after SIGSTOP of $PID"
fi
SPECS=("$W0:expiry" "$W1:reminder:any" "$W1:expiry:any" "$W2:expiry:any")
if poll 30 events_there "${SPECS[@]}" && WHY=$(python3 "$JOURNAL" expect "$J" "${SPECS[@]}"); then
  pass "no event lost or fired twice across the watchdog restart"
else
  fail "no event lost or fired twice across the watchdog restart" \
    "$(python3 "$JOURNAL" expect "$J" "${SPECS[@]}" | tr '\n' ';')"
fi
ct rm -f "$DROPIN/50-e2e-watchdog.conf"
ct systemctl daemon-reload
ctt 60 systemctl restart trialwatch.service

# --- Socket activation ----------------------------------------------------------------------

ctt 60 systemctl stop trialwatch.service 2> /dev/null
STATES=$(ct systemctl is-active trialwatch.socket trialwatch.service | tr '\n' ' ')
OUT=$(ctt 60 trialwatchctl daemon-status 2>&1)
RC=$?
if [ "$STATES" = "active inactive " ] && [ $RC -eq 0 ] && [ "$(show ActiveState)" = active ]; then
  pass "socket activation: trialwatchctl daemon-status starts the stopped service"
else
  fail "socket activation: trialwatchctl daemon-status starts the stopped service" \
    "before: socket, service $STATES; daemon-status exit $RC: $(echo "$OUT" | head -n 2 | tr '\n' ' ');" \
    "service now $(show ActiveState)"
fi

# --- Without the socket unit ---------------------------------------------------------------

# The daemon binds Socket= itself: in RuntimeDirectory=, group trialwatch, mode 0660.
ctt 60 systemctl stop trialwatch.service trialwatch.socket 2> /dev/null
ct systemctl mask --runtime trialwatch.socket > /dev/null 2>&1
OUT=$(ctt 60 systemctl start trialwatch.service 2>&1)
RC=$?
SOCKET=$(ct stat -c '%U:%G %a %F' /run/trialwatch/io.trialwatch 2>&1)
READ=$(as e2e-reader list 2>&1)
READ_RC=$?
if [ $RC -eq 0 ] && [ "$SOCKET" = "trialwatch:trialwatch 660 socket" ] && [ $READ_RC -eq 0 ] \
  && [ "$(ct systemctl is-active trialwatch.socket)" != active ]; then
  pass "without trialwatch.socket the daemon binds the socket itself ($SOCKET)"
else
  fail "without trialwatch.socket the daemon binds the socket itself" \
    "start: rc $RC $(echo "$OUT" | head -n 3 | tr '\n' ' '); socket: $SOCKET; reader: exit $READ_RC $(echo "$READ" | head -n 1)"
fi
ctt 60 systemctl stop trialwatch.service
ct systemctl unmask --runtime trialwatch.socket > /dev/null 2>&1
ctt 60 systemctl start trialwatch.socket trialwatch.service

# --- A consumer: trialwatch-consumer@.service ----------------------------------------------

CONSUMER_GROUPS=" $(ct id -nG trialwatch-consumer 2> /dev/null) "
if [[ $CONSUMER_GROUPS == *" trialwatch "* && $CONSUMER_GROUPS == *" trialwatch-admin "* ]]; then
  pass "sysusers.d made user trialwatch-consumer, in trialwatch and trialwatch-admin"
else
  fail "sysusers.d made user trialwatch-consumer, in trialwatch and trialwatch-admin" \
    "$(ct id trialwatch-consumer 2>&1)"
fi

# The command appends the event's cursor, id and kind and who ran it, and checks that its input
# is the event.
ct install -d -o trialwatch-consumer -m 0755 /srv/consumed
ct sh -c 'cat > /etc/trialwatch/consumers/e2e.conf' << 'EOF'
COMMAND='printf "%s %s %s %s\n" "$EVENT_CURSOR" "$EVENT_ID" "$EVENT_KIND" "$(id -un)" >> /srv/consumed/e2e && grep -q "\"id\":\"$EVENT_ID\"" && echo "$EVENT_ID" >> /srv/consumed/input'
CONSUME_OPTIONS=--retry-initial 100ms --timeout 30s
EOF
OUT=$(ct systemd-analyze verify trialwatch-consumer@e2e.service 2>&1)
if [ $? -eq 0 ] && [ -z "$OUT" ]; then
  pass "systemd-analyze verify trialwatch-consumer@e2e.service is clean"
else
  fail "systemd-analyze verify trialwatch-consumer@e2e.service is clean" "$(echo "$OUT" | tr '\n' ' ')"
fi
consumer_show() { ct systemctl show -P "$1" trialwatch-consumer@e2e.service; }
OUT=$(ctt 60 systemctl start trialwatch-consumer@e2e.service 2>&1)
consumer_created() { ct trialwatchctl consumer show e2e > /dev/null 2>&1; }
if [ "$(consumer_show ActiveState)" = active ] && poll 10 consumer_created; then
  pass "systemctl start trialwatch-consumer@e2e: consume runs and creates its consumer"
else
  fail "systemctl start trialwatch-consumer@e2e: consume runs and creates its consumer" \
    "$OUT $(ct journalctl -u trialwatch-consumer@e2e.service --no-pager -n 5 2>&1 | tr '\n' ' ')"
fi
CONSUMED=$(start_trial e2e-consumed --duration 3s --reminders 1s)
handled_both() { [ "$(ct sh -c "grep -c ' $CONSUMED-' /srv/consumed/e2e" 2> /dev/null)" = 2 ]; }
if poll 30 handled_both; then
  LINES=$(ct grep " $CONSUMED-" /srv/consumed/e2e)
  KINDS=$(awk '{ print $3 }' <<< "$LINES" | tr '\n' ' ')
  USERS=$(awk '{ print $4 }' <<< "$LINES" | sort -u)
  LAST=$(tail -n 1 <<< "$LINES" | awk '{ print $1 }')
  POSITION=$(ct trialwatchctl consumer show e2e --json | python3 "$JOURNAL" get consumer.acknowledged)
  INPUTS=$(ct grep -c "^$CONSUMED-" /srv/consumed/input)
  if [ "$KINDS" = "reminder expiry " ] && [ "$USERS" = trialwatch-consumer ] && [ "$POSITION" = "$LAST" ] \
    && [ "$INPUTS" = 2 ]; then
    pass "the consumer's command ran once per event as trialwatch-consumer, the event on its input; acknowledged up to $POSITION"
  else
    fail "the consumer's command ran once per event as trialwatch-consumer" \
      "kinds: $KINDS; users: $USERS; position $POSITION, last $LAST; inputs: $INPUTS"
  fi
else
  fail "the consumer's command ran once per event" \
    "not both events of $CONSUMED within 30 s: $(ct cat /srv/consumed/e2e 2>&1 | tr '\n' ';') $(ct journalctl -u trialwatch-consumer@e2e.service --no-pager -n 5 2>&1 | tr '\n' ' ')"
fi
OUT=$(ctt 60 systemctl stop trialwatch-consumer@e2e.service 2>&1)
RESULT="ActiveState=$(consumer_show ActiveState) Result=$(consumer_show Result) ExecMainStatus=$(consumer_show ExecMainStatus)"
if [ "$RESULT" = "ActiveState=inactive Result=success ExecMainStatus=0" ]; then
  pass "systemctl stop trialwatch-consumer@e2e is clean"
else
  fail "systemctl stop trialwatch-consumer@e2e is clean" "$RESULT $OUT"
fi
ct sh -c 'echo "COMMAND=" > /etc/trialwatch/consumers/empty.conf'
ctt 60 systemctl start trialwatch-consumer@empty.service > /dev/null 2>&1
RC=$?
OUT=$(ct journalctl -u trialwatch-consumer@empty.service --no-pager 2>&1)
if [ $RC -ne 0 ] && grep -q "COMMAND= is not set in /etc/trialwatch/consumers/empty.conf" <<< "$OUT" \
  && ! ct trialwatchctl consumer show empty > /dev/null 2>&1; then
  pass "an empty COMMAND= fails the consumer's start, creating no consumer"
else
  fail "an empty COMMAND= fails the consumer's start, creating no consumer" \
    "rc $RC; $(echo "$OUT" | tail -n 3 | tr '\n' ' ')"
fi
ct systemctl reset-failed trialwatch-consumer@empty.service > /dev/null 2>&1
ct systemctl stop trialwatch-consumer@empty.service > /dev/null 2>&1
# --- A burst of expiries beyond journald's rate limit ---------------------------------------

# journald drops what a unit logs beyond its rate limit: 10000 entries in 30 s, the burst
# multiplied by (log2(free bytes) - 16) / 4 when more than 1 MB is free. The journal's free space
# is at most 4 GiB (SystemMaxUse=), so at most 37500 entries a window get through unpaced. BURST
# trials expire in the same second; the daemon sends 9000 entries in any 30 s ([Journal] defaults)
# and every expiry must reach the journal, once, without journald suppressing any of the unit's
# messages. The trials are started from the host through the container's socket, pipelined.
# systemd hands the unit's LogRateLimit*= to journald as links in /run/systemd/units.
LIMIT=$(ct readlink /run/systemd/units/log-rate-limit-interval:trialwatch.service \
  /run/systemd/units/log-rate-limit-burst:trialwatch.service 2>&1 | tr '\n' ' ')
if [ "$LIMIT" = "30000000 10000 " ]; then
  pass "journald has the unit's rate limit (LogRateLimitIntervalSec=30s, LogRateLimitBurst=10000)"
else
  fail "journald has the unit's rate limit" "/run/systemd/units says: $LIMIT"
fi

BURST=${E2E_BURST:-40000}
PACE_BURST=9000
PACE_WINDOW=30
BURST_NAME="a burst of $BURST expiries in one second: each in the journal once, nothing suppressed"
SOCK=/proc/$CPID/root/run/trialwatch/io.trialwatch
if [ "${E2E_BURST_UNPACED:-}" = 1 ]; then
  ct sh -c 'mkdir -p /etc/trialwatch/trialwatch.conf.d &&
    printf "[Journal]\nRateLimitBurst=infinity\n" > /etc/trialwatch/trialwatch.conf.d/50-e2e-unpaced.conf'
  ct systemctl reload trialwatch.service
  note "burst: pacing turned off (E2E_BURST_UNPACED=1)"
fi
C=$(cursor_now)
EXPIRED_BEFORE=$(python3 "$BURST_CLIENT" expired "$SOCK")
# The client picks the common end from the rate it measures here (three times the time the
# starts should take): a slow or busy machine gets a later end, never a failure.
OUT=$(python3 "$BURST_CLIENT" start "$SOCK" e2e-burst "$BURST" auto 2>&1)
RC=$?
ENDS_S=$(echo "$OUT" | sed -n 's/^ends \([0-9]*\) .*/\1/p')
[ -n "$ENDS_S" ] || { RC=1; ENDS_S=$(date +%s); }
OUT=$(echo "$OUT" | tr '\n' ';')
all_expired() { [ "$(python3 "$BURST_CLIENT" expired "$SOCK" 2> /dev/null)" = $((EXPIRED_BEFORE + BURST)) ]; }
BURST_J=$SCRATCH/burst.json
# The unit's whole journal, not --after-cursor: with a match (-u), journalctl skips the first
# matching entry after a cursor whose own entry does not match, which loses the burst's first
# expiry whenever the cursor's entry came from another unit. The subjects are the burst's own.
burst_fetch() {
  jfetch "$BURST_J" -u trialwatch.service \
    --output-fields=MESSAGE_ID,EVENT_ID,EVENT_KIND,TRIAL_SUBJECT,PRIORITY
}
burst_there() { burst_fetch && python3 "$JOURNAL" burst "$BURST_J" e2e-burst "$BURST" --wait > /dev/null; }
# Delivery takes one window per PACE_BURST entries after the first: allow one more, and three
# minutes for a loaded machine (a missing entry shows at the deadline; early success returns).
DEADLINE=$(((BURST + PACE_BURST - 1) / PACE_BURST * PACE_WINDOW + 180))
# Unpaced, what journald drops never comes: a window and a half is enough to see it.
[ "${E2E_BURST_UNPACED:-}" = 1 ] && DEADLINE=$((PACE_WINDOW * 3 / 2))
if [ $RC -ne 0 ]; then
  fail "$BURST_NAME" "starting the trials: $(echo "$OUT" | tr '\n' ' ')"
elif ! poll $((ENDS_S - $(date +%s) + 300)) all_expired; then
  fail "$BURST_NAME" "$OUT; only $(($(python3 "$BURST_CLIENT" expired "$SOCK") - EXPIRED_BEFORE)) expired"
else
  EXPIRED_S=$(($(date +%s) - ENDS_S))
  POLL_INTERVAL=5 poll "$DEADLINE" burst_there
  DELIVERED_S=$(($(date +%s) - ENDS_S))
  SUPPRESSED=$(ct journalctl --after-cursor="$C" --no-pager -o cat 2> /dev/null \
    | grep -E 'Suppressed [0-9]+ messages from trialwatch' | head -n 3)
  if ! WHY=$(python3 "$JOURNAL" burst "$BURST_J" e2e-burst "$BURST"); then
    fail "$BURST_NAME" "$(echo "$WHY" | tr '\n' ';') after ${DELIVERED_S} s; journald: ${SUPPRESSED:-nothing suppressed}"
  elif [ -n "$SUPPRESSED" ]; then
    fail "$BURST_NAME" "journald: $(echo "$SUPPRESSED" | tr '\n' ';')"
  else
    pass "$BURST_NAME ($OUT; expired ${EXPIRED_S} s after the end, all in the journal ${DELIVERED_S} s after it)"
  fi
fi
if [ "${E2E_BURST_UNPACED:-}" = 1 ]; then
  ct rm -f /etc/trialwatch/trialwatch.conf.d/50-e2e-unpaced.conf
  ct systemctl reload trialwatch.service
fi

# --- Clean stop -----------------------------------------------------------------------------

PID=$(show MainPID)
pid1_debug on
C=$(cursor_now)
OUT=$(ctt 60 systemctl stop trialwatch.service 2>&1)
RC=$?
RESULT="rc=$RC ActiveState=$(show ActiveState) Result=$(show Result) ExecMainStatus=$(show ExecMainStatus)"
stopped_logged() {
  jfetch_after "$J" trialwatch.service "$C" && python3 "$JOURNAL" has "$J" "Stopped trialwatch.service"
}
poll 10 stopped_logged
if [ "$RESULT" != "rc=0 ActiveState=inactive Result=success ExecMainStatus=0" ]; then
  fail "systemctl stop is clean" "$RESULT $OUT"
elif ! python3 "$JOURNAL" has "$J" "Got notification message from PID $PID \\(.*STOPPING=1"; then
  fail "systemctl stop is clean" "no STOPPING=1 from PID $PID in the journal"
elif ! python3 "$JOURNAL" has "$J" "Changed (running|reload) -> stop-sigterm"; then
  fail "systemctl stop is clean" "the unit did not go through deactivating (stop-sigterm)"
else
  pass "systemctl stop is clean (STOPPING=1, deactivating, Result=success, ExecMainStatus=0)"
fi
pid1_debug off

# --- Over the whole run ---------------------------------------------------------------------

jfetch "$J" -u trialwatch.service
if WHY=$(python3 "$JOURNAL" duplicates "$J" 2> /dev/null); then
  pass "no event fired twice in the whole journal"
else
  fail "no event fired twice in the whole journal" "$(echo "$WHY" | tr '\n' ';')"
fi
if WHY=$(python3 "$JOURNAL" errors "$J"); then
  pass "trialwatchd logged no errors"
else
  fail "trialwatchd logged no errors" "$(echo "$WHY" | head -n 5 | tr '\n' ';')"
fi
