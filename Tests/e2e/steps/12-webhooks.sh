# shellcheck shell=bash
# e2e.sh, step 12 (sourced): webhooks. An endpoint on the container's loopback gets a real
# expiry from trialwatch-webhooks.service, signed as Standard Webhooks 1.0 says (checked with
# Python's hmac: the reference libraries check every message in make test); the sender stopped
# in the middle of a burst and started again loses nothing. The receiver is the host's python3
# in the container's network namespace (the container has no Python), reading the secret file
# through the container's root.

RECEIVED=$SCRATCH/hooks-received
rm -f "$RECEIVED"
# A receiver as an application runs one: each message's signatures checked against the secret
# file, a line "webhook-id verdict type" per request, 204 when a signature is right.
cat > "$SCRATCH/hooks-receiver.py" << 'END_OF_RECEIVER'
import base64, hashlib, hmac, http.server, json, sys, time

SECRET_FILE, LOG = sys.argv[1], sys.argv[2]


class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        mid, stamp = self.headers["webhook-id"], self.headers["webhook-timestamp"]
        keys = [base64.b64decode(line.strip()[len("whsec_"):]) for line in open(SECRET_FILE)
                if line.startswith("whsec_")]
        sent = [s.split(",", 1)[1] for s in self.headers["webhook-signature"].split() if s.startswith("v1,")]
        signed = f"{mid}.{stamp}.".encode() + body
        ok = abs(time.time() - int(stamp)) < 300 and any(
            hmac.compare_digest(base64.b64encode(hmac.new(k, signed, hashlib.sha256).digest()).decode(), s)
            for k in keys for s in sent)
        with open(LOG, "a") as log:
            log.write(f"{mid} {'verified' if ok else 'refused'} {json.loads(body)['type']}\n")
        self.send_response(204 if ok else 400)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


http.server.ThreadingHTTPServer(("127.0.0.1", 8399), Handler).serve_forever()
END_OF_RECEIVER
ct sh -c 'cat > /etc/trialwatch/webhooks/e2e.conf' << 'END_OF_ENDPOINT'
[Webhook]
URL=http://127.0.0.1:8399/hooks
SecretFile=/etc/trialwatch/webhooks/e2e.secret
Events=expiry
END_OF_ENDPOINT
ctt 60 systemctl reload trialwatch.service
endpoint_known() { ct trialwatchctl webhooks --json 2> /dev/null | grep -q '"e2e"'; }
poll 10 endpoint_known
SECRET=$(ct trialwatchctl webhooks secret e2e 2> /dev/null)
MODE=$(ct stat -c '%a %U %G' /etc/trialwatch/webhooks/e2e.secret 2> /dev/null)
if [[ $SECRET == whsec_* ]] && [ "$MODE" = "640 root trialwatch-webhooks" ]; then
  pass "trialwatchctl webhooks secret wrote the endpoint's secret file (0640 root:trialwatch-webhooks)"
else
  fail "trialwatchctl webhooks secret wrote the endpoint's secret file" "secret ${SECRET:0:6}..., file: $MODE"
fi
nsenter --target "$CPID" --net python3 "$SCRATCH/hooks-receiver.py" "$ROOT/etc/trialwatch/webhooks/e2e.secret" \
  "$RECEIVED" > "$SCRATCH/hooks-receiver.log" 2>&1 &
RECEIVER=$!
OUT=$(ctt 60 systemctl start trialwatch-webhooks.service 2>&1)
sender_show() { ct systemctl show -P "$1" trialwatch-webhooks.service; }
if [ "$(sender_show ActiveState)" = active ] && [ "$(sender_show User)" = trialwatch-webhooks ]; then
  pass "trialwatch-webhooks.service starts (READY=1) as trialwatch-webhooks once an endpoint exists"
else
  fail "trialwatch-webhooks.service starts" \
    "$OUT $(ct journalctl -u trialwatch-webhooks.service --no-pager -n 5 2>&1 | tr '\n' ' ')"
fi
check_exposure "systemd-analyze security of the running trialwatch-webhooks" 1.5 \
  "$(ct systemd-analyze security --no-pager trialwatch-webhooks.service 2>&1)"

HOOKED=$(start_trial e2e-hooked --duration 2s --reminders none)
hooked() { grep -q "^$HOOKED-r1-expiry verified trial.expiry$" "$RECEIVED" 2> /dev/null; }
if poll 30 hooked; then
  pass "the endpoint received the expiry of $HOOKED, its signature verified, webhook-id the event's id"
else
  fail "the endpoint received the expiry" \
    "$(tail -n 3 "$RECEIVED" "$SCRATCH/hooks-receiver.log" 2>&1 | tr '\n' ';') $(ct trialwatchctl webhooks attempts e2e 2>&1 | tail -n 3 | tr '\n' ';')"
fi

# A burst of expiries; the sender stopped once some have arrived, then started again: every one
# arrives (some may twice, under their one webhook-id).
BURST=200
ENDS=$(date -u -d '+15 seconds' +%Y-%m-%dT%H:%M:%SZ)
ctt 120 sh -c "for i in \$(seq 1 $BURST); do trialwatchctl start hook-\$i --ends-at $ENDS --reminders none > /dev/null || exit 1; done"
verified() { grep ' verified trial.expiry$' "$RECEIVED" 2> /dev/null | cut -d' ' -f1 | sort -u | wc -l; }
some_arrived() { [ "$(verified)" -gt 11 ]; }
poll 45 some_arrived
OUT=$(ctt 60 systemctl stop trialwatch-webhooks.service 2>&1)
STOPPED="$(sender_show ActiveState) $(sender_show Result)"
ctt 60 systemctl start trialwatch-webhooks.service
every_one() { [ "$(verified)" = $((BURST + 1)) ]; }
if [ "$STOPPED" = "inactive success" ] && poll 60 every_one; then
  pass "the sender stopped in a burst of $BURST expiries (cleanly) and started again: every one arrived, verified"
else
  fail "the sender stopped in a burst and started again: every one arrived" \
    "stop: $STOPPED $OUT; verified: $(verified) of $((BURST + 1))"
fi
REFUSED=$(grep -c ' refused ' "$RECEIVED")
if [ "$REFUSED" = 0 ]; then
  pass "the receiver refused no message"
else
  fail "the receiver refused no message" "$REFUSED refused"
fi
ct systemctl stop trialwatch-webhooks.service
kill "$RECEIVER" 2> /dev/null
wait "$RECEIVER" 2> /dev/null
