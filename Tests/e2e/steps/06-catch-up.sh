# shellcheck shell=bash
# e2e.sh, step 06 (sourced): catch-up after downtime: a trial that ended while stopped
# expires once, late; a trial paused before the stop neither expires while stopped nor at the
# start, and once resumed ends its time left later.

P=$(start_trial e2e-paused --duration 4s --reminders none)
PAUSED=$(ct trialwatchctl pause "$P" --json 2>&1 | python3 "$JOURNAL" get trial.state)

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

ID_PAUSED=a0b5b86a00fe43d790a37a03a2f947f8  # journal.py ID_PAUSED
ID_RESUMED=ac0a8c5469ff4fbea738cf5cfb2f368f
STATE=$(ct trialwatchctl status "$P" --json 2>/dev/null | python3 "$JOURNAL" get trial.state)
paused_logged() {
  jfetch "$J" -u trialwatch.service && python3 "$JOURNAL" has-fields "$J" "paused with" "MESSAGE_ID=$ID_PAUSED" "TRIAL_ID=$P"
}
if [ -z "$P" ] || [ "$PAUSED" != paused ] || [ "$STATE" != paused ] || ! poll 5 paused_logged \
  || python3 "$JOURNAL" has-fields "$J" "expired" "TRIAL_ID=$P"; then
  fail "a trial paused across a restart stays paused, and does not expire" \
    "trial ${P:-not started}: paused -> $PAUSED, after the restart $STATE"
else
  RESUMED=$(ct trialwatchctl resume "$P" --json 2>&1 | python3 "$JOURNAL" get trial.state)
  resumed_then_expired() {
    events_there "$P:expiry:ontime" \
      && python3 "$JOURNAL" has-fields "$J" "resumed with" "MESSAGE_ID=$ID_RESUMED" "TRIAL_ID=$P"
  }
  if [ "$RESUMED" = active ] && poll 15 resumed_then_expired; then
    pass "a trial paused across a restart stays paused (journal: paused), then resumed expires once, on time"
  else
    fail "a trial paused across a restart, resumed, expires once" "resume -> $RESUMED"
  fi
fi

# The conversion figures of today's cohort: every trial of the run so far started today, two of
# them (e2e-late, e2e-paused) expired.
TODAY=$(date -u +%F)
STATS=$(ct trialwatchctl stats --by day --from "$TODAY" 2>&1)
EXPIRED=$(awk -v day="$TODAY" '$1 == day { print $7 }' <<< "$STATS")
if grep -Eq '^DAY +STARTED +ACTIVE +PAUSED +CONVERTED +CANCELLED +EXPIRED +RATE +MEDIAN$' <<< "$STATS" \
  && grep -Eq "^total +[1-9][0-9]* " <<< "$STATS" && [ "${EXPIRED:-0}" -ge 2 ]; then
  pass "trialwatchctl stats shows today's cohort ($EXPIRED expired)"
else
  fail "trialwatchctl stats shows today's cohort" "$(tr '\n' ';' <<< "$STATS")"
fi
