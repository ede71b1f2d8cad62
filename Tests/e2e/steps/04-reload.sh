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

# A plan granted once, read at a reload: a subject that had its trial is refused under another
# spelling of its address, until root grants it again, which the journal records with who did.
ct sh -c 'printf "[Plan]\nLength=1h\nReminders=none\nOnce=plan\nSubjectKey=email\n" > /etc/trialwatch/plans/once.conf'
OUT=$(ct systemctl reload trialwatch.service 2>&1)
RC=$?
once_listed() { ct trialwatchctl plans 2>/dev/null | grep -Eq '^once +1h .* plan/email +(- +)+0'; }
if [ $RC -ne 0 ] || ! poll 10 once_listed; then
  fail "a plan granted once refuses a used subject until granted again" "reload: $OUT; plans: $(ct trialwatchctl plans 2>&1 | tr '\n' ';')"
else
  U=$(start_trial Used+e2e@Example.com --plan once)
  ct trialwatchctl end "$U" --outcome cancelled > /dev/null 2>&1
  REFUSED=$(ct trialwatchctl start used@example.com --plan once 2>&1)
  REFUSED_RC=$?
  C=$(cursor_now)
  GRANTED=$(ct trialwatchctl grant-again USED@example.com --plan once 2>&1)
  AGAIN=$(start_trial used@example.com --plan once)
  granted_logged() {
    jfetch_after "$J" trialwatch.service "$C" \
      && python3 "$JOURNAL" has-fields "$J" "granted a trial of plan once again to subject USED@example.com" \
        CALLER_UID=0 "FIRST_TRIAL=$U"
  }
  if [ -n "$U" ] && [ $REFUSED_RC -eq 1 ] && grep -q "already had the trial its plan grants once: trial $U" <<< "$REFUSED" \
    && grep -q "may start a trial of plan once again" <<< "$GRANTED" && [ -n "$AGAIN" ] && poll 5 granted_logged; then
    pass "a plan granted once refuses a used subject ($U) until granted again (journal: CALLER_UID=0)"
  else
    fail "a plan granted once refuses a used subject until granted again" \
      "first $U; refused rc $REFUSED_RC: $REFUSED; grant-again: $GRANTED; again: $AGAIN"
  fi
fi
ct rm -f /etc/trialwatch/plans/once.conf
