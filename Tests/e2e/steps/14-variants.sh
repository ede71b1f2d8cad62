# shellcheck shell=bash
# e2e.sh, step 14 (sourced): a plan with a grace, a follow-up and two variants
# (Tests/e2e/plans/offer.conf), 2,000 trials assigned by the stable hash, converted at true
# rates of 5 % and 10 % by a draw of a fixed seed (Tests/e2e/variants.py), the others entering
# grace and expiring; then `trialwatchctl stats --plan offer --variants` must give each variant
# an interval that holds its true rate, with the z-test's p-value, and the journal every event
# with TRIAL_VARIANT=: the follow-up of each trial expired fired, of each converted called off
# with its reason.

VARIANTS=$REPO/Tests/e2e/variants.py
VAR_COUNT=2000
VAR_PLAN=offer
cp "$REPO/Tests/e2e/plans/offer.conf" "$ROOT/etc/trialwatch/plans/$VAR_PLAN.conf"
OUT=$(ct trialwatchd --check-config 2>&1)
RC=$?
ct systemctl reload trialwatch.service > /dev/null 2>&1
offer_listed() { grep -Eq "^$VAR_PLAN .*base:1,bonus:1" <<< "$(ct trialwatchctl plans 2>&1)"; }
if [ $RC -eq 0 ] && poll 10 offer_listed; then
  pass "a plan with Grace= and two [Variant] sections is read; trialwatchctl plans lists base:1,bonus:1"
else
  fail "a plan with two variants is read" "check-config: rc $RC $(echo "$OUT" | tr '\n' ' '); $(ct trialwatchctl plans 2>&1 | tr '\n' ';')"
fi

SOCK=/proc/$CPID/root/run/trialwatch/io.trialwatch
EXPECTED=$(python3 "$VARIANTS" expect "$VAR_PLAN" "$VAR_COUNT")
OUT=$(python3 "$VARIANTS" run "$SOCK" "$VAR_PLAN" "$VAR_COUNT" 2>&1)
RC=$?
# Every trial ends by its start plus Length= and Grace= (one minute); the last one started now.
LAST_START_S=$(date +%s)
if [ $RC -eq 0 ] && [ "$(echo "$OUT" | tail -n 2)" = "$EXPECTED" ]; then
  pass "$VAR_COUNT trials started, each in the variant the documented hash gives; $(echo "$OUT" | tr '\n' ' ')"
else
  fail "$VAR_COUNT trials started in their variants, converted by the fixed draw" \
    "$(echo "$OUT" | tr '\n' ' '); expected: $(echo "$EXPECTED" | tr '\n' ' ')"
fi

# The trials not converted enter grace and expire; then every trial of the plan has ended.
CONVERTED=$(echo "$OUT" | sed -n 's/^started [0-9]* converted \([0-9]*\)$/\1/p')
ended_count() {
  ct trialwatchctl stats --plan "$VAR_PLAN" --variants --json \
    | python3 -c 'import json, sys; print(sum(v["converted"] + v["cancelled"] + v["expired"] for v in json.load(sys.stdin)["variants"]))'
}
all_ended() { [ "$(ended_count 2> /dev/null)" = "$VAR_COUNT" ]; }
if ! poll $((LAST_START_S + 60 + 120 - $(date +%s))) all_ended; then
  fail "every trial of plan $VAR_PLAN ended (converted, or expired after its grace)" "$(ended_count 2>&1) of $VAR_COUNT"
fi

TABLE=$(ct trialwatchctl stats --plan "$VAR_PLAN" --variants 2>&1)
if WHY=$(python3 "$VARIANTS" table base=0.05 bonus=0.10 <<< "$TABLE"); then
  pass "trialwatchctl stats --variants: each variant's 95% interval holds its true rate (5%, 10%), with the p-value: $(echo "$TABLE" | tail -n 4 | tr -s ' ' | tr '\n' ';')"
else
  fail "trialwatchctl stats --variants: each variant's 95% interval holds its true rate" "$WHY: $(echo "$TABLE" | tr '\n' ';')"
fi
if ct trialwatchctl stats --plan "$VAR_PLAN" --variants --svg /tmp/variants.svg > /dev/null 2>&1 \
  && [ "$(ct grep -c '<title>base: 95% interval' /tmp/variants.svg)" = 1 ]; then
  pass "trialwatchctl stats --variants --svg draws the variants with their intervals"
else
  fail "trialwatchctl stats --variants --svg draws the variants with their intervals" "$(ct head -c 300 /tmp/variants.svg 2>&1)"
fi

# Each trial not converted: grace-started, expiry and its follow-up 10s later, in the journal
# with its variant; each converted: its follow-up called off by the conversion.
VAR_J=$SCRATCH/variants.json
journal_counts() {
  jfetch "$VAR_J" -u trialwatch.service TRIAL_PLAN="$VAR_PLAN" \
    --output-fields=EVENT_KIND,SKIP_REASON,TRIAL_PLAN,TRIAL_VARIANT,TRIAL_ID && python3 "$VARIANTS" journal "$VAR_J" "$VAR_PLAN"
}
journal_complete() {
  COUNTS=$(journal_counts)
  [ "$(awk '$1 ~ /^follow-up/ { n += $3 } END { print n + 0 }' <<< "$COUNTS")" = "$VAR_COUNT" ]
}
POLL_INTERVAL=2 poll 60 journal_complete
WANT=""
while read -r NAME _ STARTED _ CONV; do
  WANT+="expiry $NAME $((STARTED - CONV));grace-started $NAME $((STARTED - CONV));"
  WANT+="follow-up $NAME $((STARTED - CONV));follow-up/called-off-by-conversion $NAME $CONV;"
done <<< "$EXPECTED"
GOT=$(sort -k2,2 -k1,1 <<< "$COUNTS" | tr '\n' ';')
WANT=$(tr ';' '\n' <<< "$WANT" | grep . | sort -k2,2 -k1,1 | tr '\n' ';')
WHAT="journal: each expired trial's grace-started, expiry and follow-up once, each converted trial's follow-up called off, all with TRIAL_VARIANT="
if [ "$GOT" = "$WANT" ]; then
  pass "$WHAT ($GOT)"
else
  fail "$WHAT" "got $GOT; want $WANT"
fi
