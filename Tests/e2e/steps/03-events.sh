# shellcheck shell=bash
# e2e.sh, step 03 (sourced): trials whose events fall due in a few seconds, each in the
# journal once, with its fields, its trial's labels and catalog text.

A=$(start_trial e2e-alpha --duration 6s --reminders 3s --label customer=c-991 --label tier=pro)
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

OUT=$(ct journalctl -u trialwatch.service -o verbose --no-pager TRIAL_ID="$A" EVENT_KIND=expiry 2>&1)
if grep -q "TRIAL_LABEL_CUSTOMER=c-991" <<< "$OUT" && grep -q "TRIAL_LABEL_TIER=pro" <<< "$OUT"; then
  pass "journalctl -o verbose shows the trial's labels (TRIAL_LABEL_CUSTOMER, TRIAL_LABEL_TIER)"
else
  fail "journalctl -o verbose shows the trial's labels" "$(echo "$OUT" | grep TRIAL_ | tr '\n' ' ')"
fi
