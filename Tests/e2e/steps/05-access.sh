# shellcheck shell=bash
# e2e.sh, step 05 (sourced): who may read, who may change (the groups trialwatch and
# trialwatch-admin).

ct useradd --system --no-create-home --groups trialwatch e2e-reader
ct useradd --system --no-create-home --groups trialwatch,trialwatch-admin e2e-admin
ct useradd --system --no-create-home e2e-outsider

OUT=$( { as e2e-reader list && as e2e-reader status e2e-reload-after; } 2>&1)
if [ $? -eq 0 ]; then
  pass "a member of trialwatch may read (list, status)"
else
  fail "a member of trialwatch may read (list, status)" "$(echo "$OUT" | tr '\n' ' ')"
fi

OUT=$(as e2e-reader start e2e-by-reader --duration 1h 2>&1)
RC=$?
if [ $RC -ne 0 ] && grep -qi permission <<< "$OUT"; then
  pass "a member of trialwatch only is refused start (exit $RC: $OUT)"
else
  fail "a member of trialwatch only is refused start" \
    "exit $RC: $(echo "$OUT" | head -n 2 | tr '\n' ' ') (ControlGroup= default must be trialwatch-admin)"
fi

OUT=$(as e2e-admin start e2e-by-admin --duration 1h 2>&1)
if [ $? -eq 0 ]; then
  pass "a member of trialwatch and trialwatch-admin may start"
else
  fail "a member of trialwatch and trialwatch-admin may start" "$(echo "$OUT" | tr '\n' ' ')"
fi

OUT=$(as e2e-outsider list 2>&1)
RC=$?
if [ $RC -ne 0 ] && grep -qi permission <<< "$OUT"; then
  pass "a user outside the groups cannot connect (exit $RC)"
else
  fail "a user outside the groups cannot connect" "exit $RC: $(echo "$OUT" | tr '\n' ' ')"
fi
