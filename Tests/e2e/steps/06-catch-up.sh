# shellcheck shell=bash
# e2e.sh, step 06 (sourced): catch-up after downtime: a trial that ended while stopped
# expires once, late.

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
