# shellcheck shell=bash
# e2e.sh, step 13 (sourced): the HTTP gateway. With two tokens made by trialwatchctl http token
# add (a change token and a read token), trialwatch-http.socket,
# disabled as installed, is started; the first request starts trialwatch-http.service (socket
# activation), as the user trialwatch-http, in a network namespace of its own (PrivateNetwork=yes:
# the socket comes from systemd, the daemon over its Unix socket); StartTrial with the change
# token is answered 200, with the read token 403; /metrics, fetched with a token, passes promtool
# (on the host); the journal has the change with its token's name; Debian's Prometheus scrapes
# /metrics with the read token, and a job with a wrong token is down (401). The requests are the
# host's curl in the container's network namespace (the container has no curl).

GATEWAY=http://127.0.0.1:8181
# http_call [curl arguments...]: the host's curl on the container's loopback; prints the body,
# then the status on a line of its own.
http_call() {
  timeout 20 nsenter --target "$CPID" --net curl -s -w '\n%{http_code}\n' "$@"
}
status_of() { tail -n 1 <<< "$1"; }
gateway_show() { ct systemctl show -P "$1" trialwatch-http.service; }

if ! command -v curl > /dev/null; then
  fail "the HTTP gateway's step" "no curl here (make deps installs it)"
else
  # The tokens made as an operator makes them: trialwatchctl http token add prints the secret.
  CHANGE_SECRET=$(ct trialwatchctl http token add e2e-app --scope change 2> /dev/null)
  READ_SECRET=$(ct trialwatchctl http token add e2e-prometheus --scope read 2> /dev/null)
  LISTED=$(ct trialwatchctl http token list 2>&1 | tr -s ' ' | tr '\n' ' ')
  MODE=$(ct stat -c '%a %U %G' /etc/trialwatch/http/tokens 2>&1)
  if [[ $CHANGE_SECRET =~ ^twh_[A-Za-z0-9_-]{43}$ ]] && [[ $READ_SECRET =~ ^twh_[A-Za-z0-9_-]{43}$ ]] \
    && [ "$MODE" = "640 root trialwatch-http" ] && [[ $LISTED == *"e2e-app change"*"e2e-prometheus read"* ]]; then
    pass "trialwatchctl http token add wrote two tokens (0640 root:trialwatch-http), each secret printed once"
  else
    fail "trialwatchctl http token add wrote two tokens" "secrets ${CHANGE_SECRET:0:6}... ${READ_SECRET:0:6}..., file: $MODE; list: $LISTED"
  fi

  STATES="$(ct systemctl is-enabled trialwatch-http.socket 2>&1) $(ct systemctl is-enabled trialwatch-http.service 2>&1)"
  OUT=$(ctt 60 systemctl start trialwatch-http.socket 2>&1)
  BEFORE="$(ct systemctl is-active trialwatch-http.socket 2>&1) $(ct systemctl is-active trialwatch-http.service 2>&1)"
  # The service is enabled through its socket only (its [Install] has Also= alone): "indirect".
  if [ "$STATES" = "disabled indirect" ] && [ "$BEFORE" = "active inactive" ]; then
    pass "trialwatch-http.socket, disabled as installed, listens once started; the gateway does not run yet"
  else
    fail "trialwatch-http.socket, disabled as installed, listens once started; the gateway does not run yet" \
      "is-enabled (socket, service): $STATES; is-active: $BEFORE; $OUT"
  fi

  HEALTH=$(http_call "$GATEWAY/healthz")
  if [ "$(status_of "$HEALTH")" = 200 ] && [ "$(head -n 1 <<< "$HEALTH")" = ok ] \
    && [ "$(gateway_show ActiveState)" = active ] && [ "$(gateway_show User)" = trialwatch-http ]; then
    pass "GET /healthz (no token) started trialwatch-http.service (socket activation, READY=1, as trialwatch-http): 200 ok"
  else
    fail "GET /healthz started trialwatch-http.service" \
      "$(echo "$HEALTH" | tr '\n' ' ') state: $(gateway_show ActiveState); $(ct journalctl -u trialwatch-http.service --no-pager -n 5 2>&1 | tr '\n' ' ')"
  fi
  STATUS_LINE=$(ct systemctl status trialwatch-http.service --no-pager 2> /dev/null | sed -n 's/^ *Status: //p')
  if [[ $STATUS_LINE == *"serving on the socket systemd passed"* ]]; then
    pass "systemctl status trialwatch-http shows STATUS=: $STATUS_LINE"
  else
    fail "systemctl status trialwatch-http shows STATUS=serving on the socket systemd passed" "got: $STATUS_LINE"
  fi

  # PrivateNetwork=yes: the gateway's network namespace is not the host's (here, the
  # container's), and it answers all the same.
  GATEWAY_PID=$(gateway_show MainPID)
  OWN_NET=$(ct readlink "/proc/$GATEWAY_PID/ns/net" 2>&1)
  HOST_NET=$(ct readlink /proc/1/ns/net 2>&1)
  if [[ $OWN_NET == net:* ]] && [[ $HOST_NET == net:* ]] && [ "$OWN_NET" != "$HOST_NET" ]; then
    pass "the gateway runs in a network namespace of its own (PrivateNetwork=yes) and serves on the passed socket"
  else
    fail "the gateway runs in a network namespace of its own (PrivateNetwork=yes)" "its: $OWN_NET; PID 1's: $HOST_NET"
  fi
  check_exposure "systemd-analyze security of the running trialwatch-http" 1.0 \
    "$(ct systemd-analyze security --no-pager trialwatch-http.service 2>&1)"

  C=$(cursor_now)
  START='{"subject": "e2e-http", "duration": "30d"}'
  STARTED=$(http_call -H "Authorization: Bearer $CHANGE_SECRET" --data "$START" \
    "$GATEWAY/call/io.trialwatch.Trials.StartTrial")
  if [ "$(status_of "$STARTED")" = 200 ] && grep -q '"subject" *: *"e2e-http"' <<< "$STARTED" \
    && ct trialwatchctl status e2e-http > /dev/null 2>&1; then
    pass "POST /call/io.trialwatch.Trials.StartTrial with the change token: 200, the trial is the daemon's"
  else
    fail "POST /call/io.trialwatch.Trials.StartTrial with the change token: 200" "$(echo "$STARTED" | tr '\n' ' ')"
  fi
  REFUSED=$(http_call -H "Authorization: Bearer $READ_SECRET" --data '{"subject": "e2e-http-read"}' \
    "$GATEWAY/call/io.trialwatch.Trials.StartTrial")
  if [ "$(status_of "$REFUSED")" = 403 ] && grep -q 'io.trialwatch.http.Forbidden' <<< "$REFUSED" \
    && ! ct trialwatchctl status e2e-http-read > /dev/null 2>&1; then
    pass "the same with the read token: 403 io.trialwatch.http.Forbidden, no trial"
  else
    fail "the same with the read token: 403" "$(echo "$REFUSED" | tr '\n' ' ')"
  fi
  NO_TOKEN=$(http_call --data '{"subject": "e2e-http"}' "$GATEWAY/call/io.trialwatch.Trials.GetTrial")
  READ=$(http_call -H "Authorization: Bearer $READ_SECRET" --data '{"subject": "e2e-http"}' \
    "$GATEWAY/call/io.trialwatch.Trials.GetTrial")
  if [ "$(status_of "$NO_TOKEN")" = 401 ] && [ "$(status_of "$READ")" = 200 ]; then
    pass "GetTrial without a token: 401; with the read token: 200"
  else
    fail "GetTrial without a token: 401; with the read token: 200" \
      "$(echo "$NO_TOKEN" | tr '\n' ' ') / $(echo "$READ" | tr '\n' ' ')"
  fi

  # The change in the gateway's journal, with its token's name (fields TOKEN=, METHOD=, STATUS=).
  # The whole journal after the cursor, the gateway's entries picked out here (not with a match:
  # see jfetch_after).
  GATEWAY_JOURNAL=$SCRATCH/http-journal.txt
  change_logged() {
    ct journalctl --no-pager -o json --after-cursor="$C" > "$GATEWAY_JOURNAL" 2> /dev/null \
      && python3 - "$GATEWAY_JOURNAL" << 'END_OF_CHECK'
import json, sys
wanted = {"_SYSTEMD_UNIT": "trialwatch-http.service", "MESSAGE": "change called", "TOKEN": "e2e-app",
          "METHOD": "io.trialwatch.Trials.StartTrial", "STATUS": "200"}
entries = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
sys.exit(0 if any(all(entry.get(k) == v for k, v in wanted.items()) for entry in entries) else 1)
END_OF_CHECK
  }
  if poll 10 change_logged; then
    pass "the gateway's journal has the change: token e2e-app, StartTrial, status 200"
  else
    fail "the gateway's journal has the change with its token's name" \
      "$(grep '"_SYSTEMD_UNIT":"trialwatch-http.service"' "$GATEWAY_JOURNAL" 2>&1 | grep -o '"MESSAGE":"[^"]*"' | tail -n 6 | tr '\n' ' ')"
  fi

  # /metrics for Prometheus, with the read token; promtool (on the host) finds nothing wrong.
  SCRAPED=$SCRATCH/http-metrics.txt
  METRICS_STATUS=$(timeout 20 nsenter --target "$CPID" --net curl -s -o "$SCRAPED" -w '%{http_code}' \
    -H "Authorization: Bearer $READ_SECRET" "$GATEWAY/metrics")
  if [ "$METRICS_STATUS" = 200 ] && grep -q '^trialwatch_build_info{' "$SCRAPED" \
    && grep -q '^trialwatch_trials{state="active"} ' "$SCRAPED"; then
    pass "GET /metrics with the read token: 200, $(grep -c '^trialwatch_' "$SCRAPED") trialwatch_ samples"
  else
    fail "GET /metrics with the read token: 200 and the samples" "status $METRICS_STATUS; $(head -n 3 "$SCRAPED" 2>&1 | tr '\n' ' ')"
  fi
  if ! command -v promtool > /dev/null; then
    fail "promtool check metrics finds nothing in /metrics" "no promtool here (make deps installs the package prometheus)"
  elif OUT=$(promtool check metrics < "$SCRAPED" 2>&1) && [ -z "$OUT" ]; then
    pass "promtool check metrics finds nothing in the gateway's /metrics"
  else
    fail "promtool check metrics finds nothing in the gateway's /metrics" "$(echo "$OUT" | head -n 5 | tr '\n' ';')"
  fi

  # A Prometheus server (the host's, Debian's 2.42, in the container's network namespace, its
  # files under $SCRATCH) scrapes /metrics every second with the job of docs/monitoring.md and the
  # read token, and with a second job whose token is wrong. The gateway is stopped first, its
  # socket left listening: the first scrape starts it again.
  ctt 60 systemctl stop trialwatch-http.service > /dev/null 2>&1
  BEFORE="$(ct systemctl is-active trialwatch-http.socket 2>&1) $(gateway_show ActiveState)"
  PROMETHEUS_DIR=$SCRATCH/prometheus
  PROMETHEUS_API=http://127.0.0.1:9090/api/v1
  rm -rf "$PROMETHEUS_DIR" && mkdir -p "$PROMETHEUS_DIR"
  (umask 077 && printf '%s\n' "$READ_SECRET" > "$PROMETHEUS_DIR/trialwatch.token" \
    && printf 'twh_%s\n' "$(head -c 32 /dev/urandom | base64 | tr '+/' '-_' | cut -c1-43)" > "$PROMETHEUS_DIR/wrong.token")
  cat > "$PROMETHEUS_DIR/prometheus.yml" << END_OF_CONFIG
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: trialwatch
    authorization:
      type: Bearer
      credentials_file: $PROMETHEUS_DIR/trialwatch.token
    static_configs:
      - targets: ["127.0.0.1:8181"]
  - job_name: trialwatch-wrong-token
    authorization:
      type: Bearer
      credentials_file: $PROMETHEUS_DIR/wrong.token
    static_configs:
      - targets: ["127.0.0.1:8181"]
END_OF_CONFIG
  # prometheus_api PATH: the API's answer, a JSON text, on one line.
  prometheus_api() { timeout 10 nsenter --target "$CPID" --net curl -s "$PROMETHEUS_API/$1" | tr -d '\n'; }
  # target_health JOB: "HEALTH LAST_ERROR" of the job's target, as /api/v1/targets says.
  target_health() {
    prometheus_api targets | python3 -c '
import json, sys
for target in json.load(sys.stdin)["data"]["activeTargets"]:
    if target["labels"]["job"] == sys.argv[1]:
        print(target["health"], target["lastError"])' "$1" 2> /dev/null
  }
  scraped_both() {
    [[ $(target_health trialwatch) == "up "* ]] && [[ $(target_health trialwatch-wrong-token) == down* ]]
  }
  if ! command -v prometheus > /dev/null; then
    fail "Prometheus scrapes /metrics with the read token" "no prometheus here (make deps installs the package prometheus)"
  elif ! OUT=$(promtool check config "$PROMETHEUS_DIR/prometheus.yml" 2>&1); then
    fail "promtool check config accepts the scrape jobs" "$(echo "$OUT" | tail -n 3 | tr '\n' ' ')"
  else
    # At most 5 minutes, whatever happens to this run.
    timeout 300 nsenter --target "$CPID" --net prometheus --config.file="$PROMETHEUS_DIR/prometheus.yml" \
      --storage.tsdb.path="$PROMETHEUS_DIR/data" --web.listen-address=127.0.0.1:9090 \
      > "$PROMETHEUS_DIR/prometheus.log" 2>&1 &
    PROMETHEUS=$!
    if [ "$BEFORE" = "active inactive" ] && poll 60 scraped_both && [ "$(gateway_show ActiveState)" = active ]; then
      pass "Prometheus $(prometheus --version 2>&1 | head -n 1 | cut -d' ' -f3) scrapes /metrics with the read token (Authorization: Bearer from credentials_file): up; the scrape started the gateway"
    else
      fail "Prometheus scrapes /metrics with the read token: up" \
        "trialwatch: $(target_health trialwatch); socket and gateway before: $BEFORE, after: $(gateway_show ActiveState); $(tail -n 3 "$PROMETHEUS_DIR/prometheus.log" | tr '\n' ' ')"
    fi
    WRONG=$(target_health trialwatch-wrong-token)
    if [[ $WRONG == down*401* ]]; then
      pass "the job with a wrong token is down: ${WRONG#down }"
    else
      fail "the job with a wrong token is down with a 401" "got: $WRONG"
    fi
    QUERY='trialwatch_trials{job="trialwatch",state="active"}'
    stored() {
      ACTIVE=$(ct trialwatchctl daemon-status --json | python3 "$JOURNAL" get trials.active)
      STORED=$(prometheus_api "query?query=$(python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1]))' "$QUERY")" \
        | python3 -c 'import json, sys; print(*(r["value"][1] for r in json.load(sys.stdin)["data"]["result"]))' 2> /dev/null)
      [ "$STORED" = "$ACTIVE" ]
    }
    if poll 30 stored; then
      pass "Prometheus stored the samples: $QUERY is $STORED, as the daemon counts"
    else
      fail "Prometheus stored the samples: $QUERY is $ACTIVE" "got: ${STORED:-nothing}"
    fi
    kill "$PROMETHEUS" 2> /dev/null
    wait "$PROMETHEUS" 2> /dev/null
  fi

  # Stopped again, the socket first (or a connection would start the gateway again).
  OUT=$(ctt 60 systemctl stop trialwatch-http.socket trialwatch-http.service 2>&1)
  STOPPED="$(gateway_show ActiveState) $(gateway_show Result)"
  if [ "$STOPPED" = "inactive success" ]; then
    pass "trialwatch-http.service and its socket stop cleanly"
  else
    fail "trialwatch-http.service and its socket stop cleanly" "$STOPPED $OUT"
  fi
fi
