# shellcheck shell=bash
# e2e.sh, step 09 (sourced): a consumer: trialwatch-consumer@.service runs a command per
# event.

CONSUMER_GROUPS=" $(ct id -nG trialwatch-consumer 2> /dev/null) "
if [[ $CONSUMER_GROUPS == *" trialwatch "* && $CONSUMER_GROUPS == *" trialwatch-admin "* ]]; then
  pass "sysusers.d made user trialwatch-consumer, in trialwatch and trialwatch-admin"
else
  fail "sysusers.d made user trialwatch-consumer, in trialwatch and trialwatch-admin" \
    "$(ct id trialwatch-consumer 2>&1)"
fi

# The command appends the event's cursor, id and kind, who ran it and the trial's plan
# (TRIAL_PLAN, - for none), and checks that its input is the event.
ct install -d -o trialwatch-consumer -m 0755 /srv/consumed
ct sh -c 'cat > /etc/trialwatch/consumers/e2e.conf' << 'EOF'
COMMAND='printf "%s %s %s %s %s\n" "$EVENT_CURSOR" "$EVENT_ID" "$EVENT_KIND" "$(id -un)" "${TRIAL_PLAN:--}" >> /srv/consumed/e2e && grep -q "\"id\":\"$EVENT_ID\"" && echo "$EVENT_ID" >> /srv/consumed/input'
CONSUME_OPTIONS=--retry-initial 100ms --timeout 30s
EOF
OUT=$(ct systemd-analyze verify trialwatch-consumer@e2e.service 2>&1)
if [ $? -eq 0 ] && [ -z "$OUT" ]; then
  pass "systemd-analyze verify trialwatch-consumer@e2e.service is clean"
else
  fail "systemd-analyze verify trialwatch-consumer@e2e.service is clean" "$(echo "$OUT" | tr '\n' ' ')"
fi
consumer_show() { ct systemctl show -P "$1" trialwatch-consumer@e2e.service; }
OUT=$(ctt 60 systemctl start trialwatch-consumer@e2e.service 2>&1)
consumer_created() { ct trialwatchctl consumer show e2e > /dev/null 2>&1; }
if [ "$(consumer_show ActiveState)" = active ] && poll 10 consumer_created; then
  pass "systemctl start trialwatch-consumer@e2e: consume runs and creates its consumer"
else
  fail "systemctl start trialwatch-consumer@e2e: consume runs and creates its consumer" \
    "$OUT $(ct journalctl -u trialwatch-consumer@e2e.service --no-pager -n 5 2>&1 | tr '\n' ' ')"
fi
# A trial of the plan pro (03-events.sh), its own length and reminders over the plan's.
CONSUMED=$(start_trial e2e-consumed --plan pro --duration 3s --reminders 1s)
handled_both() { [ "$(ct sh -c "grep -c ' $CONSUMED-' /srv/consumed/e2e" 2> /dev/null)" = 2 ]; }
if poll 30 handled_both; then
  LINES=$(ct grep " $CONSUMED-" /srv/consumed/e2e)
  KINDS=$(awk '{ print $3 }' <<< "$LINES" | tr '\n' ' ')
  USERS=$(awk '{ print $4 }' <<< "$LINES" | sort -u)
  PLANS=$(awk '{ print $5 }' <<< "$LINES" | tr '\n' ' ')
  LAST=$(tail -n 1 <<< "$LINES" | awk '{ print $1 }')
  POSITION=$(ct trialwatchctl consumer show e2e --json | python3 "$JOURNAL" get consumer.acknowledged)
  INPUTS=$(ct grep -c "^$CONSUMED-" /srv/consumed/input)
  if [ "$KINDS" = "reminder expiry " ] && [ "$USERS" = trialwatch-consumer ] && [ "$POSITION" = "$LAST" ] \
    && [ "$INPUTS" = 2 ] && [ "$PLANS" = "pro pro " ]; then
    pass "the consumer's command ran once per event as trialwatch-consumer, the event on its input, TRIAL_PLAN=pro in its environment; acknowledged up to $POSITION"
  else
    fail "the consumer's command ran once per event as trialwatch-consumer" \
      "kinds: $KINDS; users: $USERS; position $POSITION, last $LAST; inputs: $INPUTS; TRIAL_PLAN: $PLANS"
  fi
else
  fail "the consumer's command ran once per event" \
    "not both events of $CONSUMED within 30 s: $(ct cat /srv/consumed/e2e 2>&1 | tr '\n' ';') $(ct journalctl -u trialwatch-consumer@e2e.service --no-pager -n 5 2>&1 | tr '\n' ' ')"
fi
OUT=$(ctt 60 systemctl stop trialwatch-consumer@e2e.service 2>&1)
RESULT="ActiveState=$(consumer_show ActiveState) Result=$(consumer_show Result) ExecMainStatus=$(consumer_show ExecMainStatus)"
if [ "$RESULT" = "ActiveState=inactive Result=success ExecMainStatus=0" ]; then
  pass "systemctl stop trialwatch-consumer@e2e is clean"
else
  fail "systemctl stop trialwatch-consumer@e2e is clean" "$RESULT $OUT"
fi
ct sh -c 'echo "COMMAND=" > /etc/trialwatch/consumers/empty.conf'
ctt 60 systemctl start trialwatch-consumer@empty.service > /dev/null 2>&1
RC=$?
OUT=$(ct journalctl -u trialwatch-consumer@empty.service --no-pager 2>&1)
if [ $RC -ne 0 ] && grep -q "COMMAND= is not set in /etc/trialwatch/consumers/empty.conf" <<< "$OUT" \
  && ! ct trialwatchctl consumer show empty > /dev/null 2>&1; then
  pass "an empty COMMAND= fails the consumer's start, creating no consumer"
else
  fail "an empty COMMAND= fails the consumer's start, creating no consumer" \
    "rc $RC; $(echo "$OUT" | tail -n 3 | tr '\n' ' ')"
fi
ct systemctl reset-failed trialwatch-consumer@empty.service > /dev/null 2>&1
ct systemctl stop trialwatch-consumer@empty.service > /dev/null 2>&1
