# shellcheck shell=bash
# e2e.sh, step 10 (sourced): a burst of expiries beyond journald's rate limit, every one in
# the journal, once.

# journald drops what a unit logs beyond its rate limit: 10000 entries in 30 s, the burst
# multiplied by (log2(free bytes) - 16) / 4 when more than 1 MB is free. The journal's free space
# is at most 4 GiB (SystemMaxUse=), so at most 37500 entries a window get through unpaced. BURST
# trials expire in the same second; the daemon sends 9000 entries in any 30 s ([Journal] defaults)
# and every expiry must reach the journal, once, without journald suppressing any of the unit's
# messages. The trials are started from the host through the container's socket, pipelined.
# systemd hands the unit's LogRateLimit*= to journald as links in /run/systemd/units.
LIMIT=$(ct readlink /run/systemd/units/log-rate-limit-interval:trialwatch.service \
  /run/systemd/units/log-rate-limit-burst:trialwatch.service 2>&1 | tr '\n' ' ')
if [ "$LIMIT" = "30000000 10000 " ]; then
  pass "journald has the unit's rate limit (LogRateLimitIntervalSec=30s, LogRateLimitBurst=10000)"
else
  fail "journald has the unit's rate limit" "/run/systemd/units says: $LIMIT"
fi

BURST_CLIENT=$REPO/Tests/e2e/burst.py
BURST=${E2E_BURST:-40000}
PACE_BURST=9000
PACE_WINDOW=30
BURST_NAME="a burst of $BURST expiries in one second: each in the journal once, nothing suppressed"
SOCK=/proc/$CPID/root/run/trialwatch/io.trialwatch
if [ "${E2E_BURST_UNPACED:-}" = 1 ]; then
  ct sh -c 'mkdir -p /etc/trialwatch/trialwatch.conf.d &&
    printf "[Journal]\nRateLimitBurst=infinity\n" > /etc/trialwatch/trialwatch.conf.d/50-e2e-unpaced.conf'
  ct systemctl reload trialwatch.service
  note "burst: pacing turned off (E2E_BURST_UNPACED=1)"
fi
C=$(cursor_now)
EXPIRED_BEFORE=$(python3 "$BURST_CLIENT" expired "$SOCK")
# The client picks the common end from the rate it measures here (three times the time the
# starts should take): a slow or busy machine gets a later end, never a failure.
OUT=$(python3 "$BURST_CLIENT" start "$SOCK" e2e-burst "$BURST" auto 2>&1)
RC=$?
ENDS_S=$(echo "$OUT" | sed -n 's/^ends \([0-9]*\) .*/\1/p')
[ -n "$ENDS_S" ] || { RC=1; ENDS_S=$(date +%s); }
OUT=$(echo "$OUT" | tr '\n' ';')
all_expired() { [ "$(python3 "$BURST_CLIENT" expired "$SOCK" 2> /dev/null)" = $((EXPIRED_BEFORE + BURST)) ]; }
BURST_J=$SCRATCH/burst.json
# The unit's whole journal, not --after-cursor: with a match (-u), journalctl skips the first
# matching entry after a cursor whose own entry does not match, which loses the burst's first
# expiry whenever the cursor's entry came from another unit. The subjects are the burst's own.
burst_fetch() {
  jfetch "$BURST_J" -u trialwatch.service \
    --output-fields=MESSAGE_ID,EVENT_ID,EVENT_KIND,TRIAL_SUBJECT,PRIORITY
}
burst_there() { burst_fetch && python3 "$JOURNAL" burst "$BURST_J" e2e-burst "$BURST" --wait > /dev/null; }
# Delivery takes one window per PACE_BURST entries after the first: allow one more, and three
# minutes for a loaded machine (a missing entry shows at the deadline; early success returns).
DEADLINE=$(((BURST + PACE_BURST - 1) / PACE_BURST * PACE_WINDOW + 180))
# Unpaced, what journald drops never comes: a window and a half is enough to see it.
[ "${E2E_BURST_UNPACED:-}" = 1 ] && DEADLINE=$((PACE_WINDOW * 3 / 2))
if [ $RC -ne 0 ]; then
  fail "$BURST_NAME" "starting the trials: $(echo "$OUT" | tr '\n' ' ')"
elif ! poll $((ENDS_S - $(date +%s) + 300)) all_expired; then
  fail "$BURST_NAME" "$OUT; only $(($(python3 "$BURST_CLIENT" expired "$SOCK") - EXPIRED_BEFORE)) expired"
else
  EXPIRED_S=$(($(date +%s) - ENDS_S))
  POLL_INTERVAL=5 poll "$DEADLINE" burst_there
  DELIVERED_S=$(($(date +%s) - ENDS_S))
  SUPPRESSED=$(ct journalctl --after-cursor="$C" --no-pager -o cat 2> /dev/null \
    | grep -E 'Suppressed [0-9]+ messages from trialwatch' | head -n 3)
  if ! WHY=$(python3 "$JOURNAL" burst "$BURST_J" e2e-burst "$BURST"); then
    fail "$BURST_NAME" "$(echo "$WHY" | tr '\n' ';') after ${DELIVERED_S} s; journald: ${SUPPRESSED:-nothing suppressed}"
  elif [ -n "$SUPPRESSED" ]; then
    fail "$BURST_NAME" "journald: $(echo "$SUPPRESSED" | tr '\n' ';')"
  else
    pass "$BURST_NAME ($OUT; expired ${EXPIRED_S} s after the end, all in the journal ${DELIVERED_S} s after it)"
  fi
fi
if [ "${E2E_BURST_UNPACED:-}" = 1 ]; then
  ct rm -f /etc/trialwatch/trialwatch.conf.d/50-e2e-unpaced.conf
  ct systemctl reload trialwatch.service
fi
