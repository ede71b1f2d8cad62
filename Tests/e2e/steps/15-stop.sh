# shellcheck shell=bash
# e2e.sh, step 15 (sourced): a clean stop, then the whole run's journal: no event fired
# twice, no error logged.

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
