# shellcheck shell=bash
# e2e.sh, step 11 (sourced): the metrics. trialwatch-report.socket serves io.systemd.Metrics as
# systemd-report reads it, and nothing else; trialwatch-metrics.timer, disabled as installed,
# writes them for the node exporter's textfile collector once enabled, and again every 15 s;
# Debian's node exporter serves them; promtool finds nothing wrong in the file nor in what the
# node exporter serves.

METRICS=$REPO/Tests/e2e/metrics.py
REPORT=/run/systemd/report/io.trialwatch

# --- The report socket, as systemd-report reads it ------------------------------------------

STATES="$(ct systemctl is-enabled trialwatch-report.socket 2>&1) $(ct systemctl is-active trialwatch-report.socket 2>&1)"
SOCKET=$(ct stat -c '%U:%G %a %F' "$REPORT" 2>&1)
if [ "$STATES" = "enabled active" ] && [ "$SOCKET" = "trialwatch:trialwatch 660 socket" ]; then
  pass "trialwatch-report.socket enabled and listening on $REPORT ($SOCKET)"
else
  fail "trialwatch-report.socket enabled and listening on $REPORT" "is-enabled, is-active: $STATES; socket: $SOCKET"
fi

# From the host, through the container's root: the container has no python3.
for socket in "$REPORT" /run/trialwatch/io.trialwatch; do
  if OUT=$(python3 "$METRICS" varlink "/proc/$CPID/root$socket" 2>&1); then
    pass "io.systemd.Metrics.List and Describe on $socket: replies marked continues but the last ($OUT)"
  else
    fail "io.systemd.Metrics.List and Describe on $socket" "$(echo "$OUT" | head -n 5 | tr '\n' ';')"
  fi
done
if OUT=$(python3 "$METRICS" refused "/proc/$CPID/root$REPORT" io.trialwatch.Trials.GetStatus 2>&1) \
  && grep -Eqx 'org\.varlink\.service\.(InterfaceNotFound|MethodNotFound)' <<< "$OUT"; then
  pass "the report socket serves only the metrics (io.trialwatch.Trials.GetStatus: $OUT)"
else
  fail "the report socket serves only the metrics" "io.trialwatch.Trials.GetStatus: $(echo "$OUT" | tr '\n' ' ')"
fi

# Who may read: members of trialwatch (the users of 05-access.sh), on either socket.
if OUT=$(as e2e-reader metrics --prometheus 2>&1) && grep -q '^trialwatch_build_info{' <<< "$OUT"; then
  pass "a member of trialwatch may read the metrics (trialwatchctl metrics --prometheus)"
else
  fail "a member of trialwatch may read the metrics" "$(echo "$OUT" | head -n 3 | tr '\n' ' ')"
fi
OUT=$(as e2e-outsider metrics --socket "$REPORT" 2>&1)
RC=$?
if [ $RC -ne 0 ] && grep -qi permission <<< "$OUT"; then
  pass "a user outside the groups cannot connect to the report socket (exit $RC)"
else
  fail "a user outside the groups cannot connect to the report socket" "exit $RC: $(echo "$OUT" | head -n 2 | tr '\n' ' ')"
fi

# --- The file for the node exporter's textfile collector --------------------------------------

# Debian's prometheus-node-exporter (in the container's root) made the directory; the timer
# writes nothing until it is enabled.
ENABLED=$(ct systemctl is-enabled trialwatch-metrics.timer 2>&1)
if [ "$ENABLED" = disabled ] && ct test -d "$TEXTFILES" && ! ct test -e "$PROM"; then
  pass "trialwatch-metrics.timer is disabled as installed ($TEXTFILES has no trialwatch.prom)"
else
  fail "trialwatch-metrics.timer is disabled as installed" \
    "is-enabled: $ENABLED; $(ct ls -la "$TEXTFILES" 2>&1 | tr '\n' ' ')"
fi

if enable_metrics_timer; then
  TOOK_MS=$((($(date +%s%N) - ENABLED_NS) / 1000000))
  FILE=$(ct stat -c '%a %U:%G' "$PROM")
  FILES=$(ct ls -A "$TEXTFILES" | tr '\n' ' ')
  if [ "$FILE" = "644 root:root" ] && [ "$FILES" = "trialwatch.prom " ]; then
    pass "systemctl enable --now trialwatch-metrics.timer: $PROM written ${TOOK_MS} ms later (mode 0644, no temporary file left)"
  else
    fail "systemctl enable --now trialwatch-metrics.timer: $PROM written" \
      "mode and owner: $FILE (expected 644 root:root); in $TEXTFILES: $FILES"
  fi
else
  fail "systemctl enable --now trialwatch-metrics.timer: $PROM written within 15 s" "$(metrics_timer_failure)"
fi

# Written again every 15 s: a trial started now is counted in the file within a run or two.
file_active() { ct sed -n 's/^trialwatch_trials{state="active"} //p' "$PROM" 2> /dev/null; }
BEFORE=$(file_active)
start_trial e2e-metrics --duration 1h > /dev/null
ACTIVE=$(ct trialwatchctl daemon-status --json | python3 "$JOURNAL" get trials.active)
follows() { [ "$(file_active)" = "$ACTIVE" ]; }
if [ -n "$BEFORE" ] && [ "$ACTIVE" = $((BEFORE + 1)) ] && poll 40 follows; then
  pass "the timer writes the file again: trialwatch_trials{state=\"active\"} $BEFORE, then $ACTIVE"
else
  fail "the timer writes the file again" \
    "trialwatch_trials{state=\"active\"} $BEFORE, then $(file_active) (the daemon: $ACTIVE active)"
fi

# --- Debian's node exporter serves it ---------------------------------------------------------

# On the container's loopback only; the textfile directory is Debian's default, named anyway.
ct sh -c "printf 'ARGS=\"--web.listen-address=127.0.0.1:9100 --collector.textfile.directory=$TEXTFILES\"\n' \
  > /etc/default/prometheus-node-exporter"
OUT=$(ctt 60 systemctl restart prometheus-node-exporter.service 2>&1) || note "restarting the node exporter: $OUT"
NODE=$SCRATCH/node-exporter.txt
# Fetched in the container's network namespace by the host's python3.
scraped() {
  timeout 20 nsenter --target "$CPID" --net python3 "$METRICS" fetch http://127.0.0.1:9100/metrics > "$NODE" 2> /dev/null \
    && grep -q '^trialwatch_build_info{' "$NODE" && grep -q '^trialwatch_trials{state="active"} ' "$NODE"
}
if poll 30 scraped && grep -qx 'node_textfile_scrape_error 0' "$NODE"; then
  pass "Debian's node exporter on 127.0.0.1:9100 serves $(grep -c '^trialwatch_' "$NODE") trialwatch_ samples from the textfile"
else
  SERVED=$(grep -E '^(trialwatch_build_info|trialwatch_trials|node_textfile_scrape_error)' "$NODE" 2>&1)
  LOGGED=$(ct journalctl -u prometheus-node-exporter.service --no-pager -n 3 2>&1)
  fail "Debian's node exporter on 127.0.0.1:9100 serves the trialwatch_ samples" \
    "served: $(echo "$SERVED" | tr '\n' ' '); its journal: $(echo "$LOGGED" | tr '\n' ' ')"
fi

# promtool (Debian's prometheus, from make deps) parses and lints: HELP for every family,
# counters ending in _total, base units, no name a histogram's samples would take.
if ! command -v promtool > /dev/null; then
  fail "promtool check metrics finds nothing" "no promtool here (make deps installs the package prometheus)"
else
  if OUT=$(ct cat "$PROM" | promtool check metrics 2>&1) && [ -z "$OUT" ]; then
    pass "promtool check metrics finds nothing in $PROM"
  else
    fail "promtool check metrics finds nothing in $PROM" "$(echo "$OUT" | head -n 5 | tr '\n' ';')"
  fi
  if OUT=$(grep -E '^(# (HELP|TYPE) )?trialwatch_' "$NODE" | promtool check metrics 2>&1) && [ -z "$OUT" ]; then
    pass "promtool check metrics finds nothing in the node exporter's trialwatch_ families"
  else
    fail "promtool check metrics finds nothing in the node exporter's trialwatch_ families" \
      "$(echo "$OUT" | head -n 5 | tr '\n' ';')"
  fi
fi

# Off again: a run after the service's stop (15-stop.sh) would start the daemon again through
# its socket.
ctt 60 systemctl disable --now trialwatch-metrics.timer > /dev/null 2>&1
ctt 60 systemctl stop trialwatch-metrics.service prometheus-node-exporter.service > /dev/null 2>&1
