# shellcheck shell=bash
# e2e.sh, step 04 (sourced): reload: systemctl reload applies a changed configuration.

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
