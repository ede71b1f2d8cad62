# shellcheck shell=bash
# e2e.sh, step 03 (sourced): trials whose events fall due in a few seconds, each in the
# journal once, with its fields, its trial's labels, its plan and catalog text. The plans are
# the shipped samples, read at systemctl reload; pro's trials last seconds here.

# The samples copied where the daemon reads plans, pro's length and reminders made seconds.
ct sh -c 'cp /usr/share/doc/trialwatch/examples/plans/*.conf /etc/trialwatch/plans/ &&
  sed -i -e "s/^Description=.*/Description=Pro, seconds (e2e)/" -e "s/^Length=.*/Length=6s/" \
    -e "s/^Reminders=.*/Reminders=3s/" /etc/trialwatch/plans/pro.conf'
OUT=$(ct trialwatchd --check-config 2>&1)
if [ $? -eq 0 ] && ! grep -Eq 'warning|error' <<< "$OUT"; then
  pass "trialwatchd --check-config accepts the plans (the shipped samples)"
else
  fail "trialwatchd --check-config accepts the plans (the shipped samples)" "$(echo "$OUT" | tr '\n' ' ')"
fi
OUT=$(ct systemctl reload trialwatch.service 2>&1)
RC=$?
# The service started without plans: they come with the reload (SIGHUP, done when it says so).
plans_listed() {
  PLANS=$(ct trialwatchctl plans 2>&1) && grep -Eq '^pro +6s +3s before the end +tier=pro +(- +)+0 +Pro, seconds' <<< "$PLANS" \
    && grep -Eq '^enterprise +4w 2d +1w, 3d, 1d before the end +support=priority, tier=enterprise +(- +)+0 ' <<< "$PLANS"
}
if [ $RC -eq 0 ] && poll 10 plans_listed; then
  pass "systemctl reload reads the plans; trialwatchctl plans lists pro and enterprise"
else
  fail "systemctl reload reads the plans; trialwatchctl plans lists pro and enterprise" \
    "systemctl reload: rc $RC $OUT; plans: $(echo "$PLANS" | tr '\n' ';')"
fi

P=$(start_trial e2e-plan --plan pro --label customer=c-991)
A=$(start_trial e2e-alpha --duration 6s --reminders 3s --label customer=c-991 --label tier=pro)
B=$(start_trial e2e-beta --duration 8s --reminders 6s,3s)
if [ -n "$P" ] && [ -n "$A" ] && [ -n "$B" ]; then
  pass "trialwatchctl start (trials $P of plan pro, $A, $B)"
else
  fail "trialwatchctl start" "no trial id in the reply ($(ct trialwatchctl start e2e-gamma --duration 1h 2>&1))"
fi

live_status() { grep -q '^"3 active trials; next: e2e-' <<< "$(status_text)"; }
if poll 5 live_status; then
  pass "systemctl status shows the live STATUS= ($(status_text))"
else
  fail "systemctl status shows the live STATUS=" "Status line: $(status_text)"
fi

# The trial has the plan's length, reminders and labels, with its own label beside them.
STATUS=$(ct trialwatchctl status e2e-plan --json)
got() { python3 "$JOURNAL" get "$1" <<< "$STATUS"; }
ENDS_NS=$(date -d "$(got trial.endsAt)" +%s%N 2> /dev/null)
STARTED_NS=$(date -d "$(got trial.startedAt)" +%s%N 2> /dev/null)
LENGTH_MS=$(((${ENDS_NS:-0} - ${STARTED_NS:-0}) / 1000000))
if [ "$(got trial.plan)" = pro ] && [ "$(got trial.labels.customer)" = c-991 ] \
  && [ "$(got trial.labels.tier)" = pro ] && [ "$(got trial.reminders)" = 3s ] && [ "$LENGTH_MS" = 6000 ] \
  && grep -Eq '^ +Plan +pro$' <<< "$(ct trialwatchctl status e2e-plan)"; then
  pass "trialwatchctl status shows the plan, its length, reminders and labels (pro; 6s; 3s; customer=c-991, tier=pro)"
else
  fail "trialwatchctl status shows the plan, its length, reminders and labels" "length ${LENGTH_MS} ms; $STATUS"
fi

SPECS=("$P:reminder" "$P:expiry" "$A:reminder" "$A:expiry" "$B:reminder" "$B:reminder" "$B:expiry")
if poll 30 events_there "${SPECS[@]}"; then
  if WHY=$(python3 "$JOURNAL" expect "$J" "${SPECS[@]}"); then
    pass "journal: each reminder and expiry once, with MESSAGE_ID and fields"
  else
    fail "journal: each reminder and expiry once, with MESSAGE_ID and fields" "$(echo "$WHY" | tr '\n' ';')"
  fi
else
  fail "journal: each reminder and expiry once, with MESSAGE_ID and fields" \
    "not all 7 events within 30 s: $(python3 "$JOURNAL" expect "$J" "${SPECS[@]}" | tr '\n' ';')"
fi

OUT=$(ct journalctl -u trialwatch.service -x --no-pager TRIAL_ID="$A" 2>&1)
if grep -q "Subject: Trial e2e-alpha expired" <<< "$OUT" \
  && grep -q "Subject: Trial e2e-alpha reminder" <<< "$OUT" \
  && grep -q "Defined-By: trialwatch" <<< "$OUT"; then
  pass "journalctl -x shows the catalog text"
else
  fail "journalctl -x shows the catalog text" "$(echo "$OUT" | tail -n 5 | tr '\n' ' ')"
fi

OUT=$(ct journalctl -u trialwatch.service -o verbose --no-pager TRIAL_ID="$A" EVENT_KIND=expiry 2>&1)
if grep -q "TRIAL_LABEL_CUSTOMER=c-991" <<< "$OUT" && grep -q "TRIAL_LABEL_TIER=pro" <<< "$OUT" \
  && ! grep -q "TRIAL_PLAN=" <<< "$OUT"; then
  pass "journalctl -o verbose shows the trial's labels (TRIAL_LABEL_CUSTOMER, TRIAL_LABEL_TIER), no plan"
else
  fail "journalctl -o verbose shows the trial's labels, no plan" "$(echo "$OUT" | grep TRIAL_ | tr '\n' ' ')"
fi

# Both events of the plan's trial, found by the plan, each with the plan and the labels.
OUT=$(ct journalctl -u trialwatch.service -o verbose --no-pager TRIAL_PLAN=pro 2>&1)
count() { grep -c "^ *$1\$" <<< "$OUT"; }
if [ "$(count "TRIAL_ID=$P")" = 2 ] && [ "$(count "TRIAL_PLAN=pro")" = 2 ] \
  && [ "$(count "EVENT_KIND=reminder")" = 1 ] && [ "$(count "EVENT_KIND=expiry")" = 1 ] \
  && [ "$(count "TRIAL_LABEL_CUSTOMER=c-991")" = 2 ] && [ "$(count "TRIAL_LABEL_TIER=pro")" = 2 ]; then
  pass "journalctl -o verbose TRIAL_PLAN=pro: the plan's trial's reminder and expiry, with TRIAL_PLAN and its labels"
else
  fail "journalctl -o verbose TRIAL_PLAN=pro: the plan's trial's reminder and expiry, with TRIAL_PLAN and its labels" \
    "$(echo "$OUT" | grep -E 'TRIAL_|EVENT_KIND' | tr '\n' ' ')"
fi
LISTED=$(ct trialwatchctl list --plan pro --all | awk 'NR > 1 { print $2 " " $3 }' | tr '\n' ';')
if [ "$LISTED" = "e2e-plan expired;" ]; then
  pass "trialwatchctl list --plan pro lists the plan's trial only ($LISTED)"
else
  fail "trialwatchctl list --plan pro lists the plan's trial only" "listed: $LISTED"
fi
