# shellcheck shell=bash
# e2e.sh, step 07 (sourced): the watchdog: a hung daemon is killed and restarted, no
# event lost or fired twice.

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
if poll 30 events_there "${SPECS[@]}" && python3 "$JOURNAL" expect "$J" "${SPECS[@]}" > /dev/null; then
  pass "no event lost or fired twice across the watchdog restart"
else
  fail "no event lost or fired twice across the watchdog restart" \
    "$(python3 "$JOURNAL" expect "$J" "${SPECS[@]}" | tr '\n' ';')"
fi
ct rm -f "$DROPIN/50-e2e-watchdog.conf"
ct systemctl daemon-reload
ctt 60 systemctl restart trialwatch.service
