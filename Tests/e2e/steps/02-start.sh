# shellcheck shell=bash
# e2e.sh, step 02 (sourced): start: active only after READY=1, the STATUS= line, the
# limit on open files.

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
