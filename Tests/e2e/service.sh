# shellcheck shell=bash
# Shared by the steps of e2e.sh (sourced after container.sh): the service in the booted
# container, its journal, and who calls it. Needs SCRATCH and JOURNAL (container.sh sets them).

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
# events_there SPEC...: the service's journal in $J has every event of the specs (journal.py
# expect --wait).
events_there() {
  jfetch "$J" -u trialwatch.service && python3 "$JOURNAL" expect "$J" --wait "$@"
}

# PID 1 logs every notification a service sends at debug level (READY=1, RELOADING=1,
# STOPPING=1): turned on for the checks that look for them.
pid1_debug() {
  local level=info
  [ "$1" = on ] && level=debug
  ct systemd-analyze log-level "$level" > /dev/null 2>&1 || note "cannot set PID 1's log level to $level"
}

show() { ct systemctl show -P "$1" trialwatch.service; }
status_text() { ct systemctl status trialwatch.service --no-pager 2> /dev/null | sed -n 's/^ *Status: //p'; }

# start_trial SUBJECT ARGS...: starts a trial as root and prints its id.
start_trial() {
  local subject=$1
  shift
  ct trialwatchctl start "$subject" "$@" --json | python3 "$JOURNAL" get trial.id
}

# as USER ARGS...: trialwatchctl ARGS as USER (the users are made by the access step).
as() {
  local user=$1
  shift
  ct runuser -u "$user" -- trialwatchctl "$@"
}
