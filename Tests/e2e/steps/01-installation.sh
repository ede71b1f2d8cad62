# shellcheck shell=bash
# e2e.sh, step 01 (sourced): the installation in the container. The units verify, their
# exposure (also with the fleet drop-in, the webhooks' sender's and the HTTP gateway's), the users,
# the catalog, the units enabled (the report socket with the service, the metrics timer and the
# gateway's socket not).

OUT=$(ct systemd-analyze verify trialwatch.service trialwatch.socket trialwatch-report.socket \
  trialwatch-metrics.service trialwatch-metrics.timer trialwatch-webhooks.service trialwatch-http.socket \
  trialwatch-http.service 2>&1)
if [ $? -eq 0 ] && [ -z "$OUT" ]; then
  pass "systemd-analyze verify is clean"
else
  fail "systemd-analyze verify is clean" "$(echo "$OUT" | tr '\n' ' ')"
fi

check_exposure hardening 1.0 "$(ct systemd-analyze security --offline=yes trialwatch.service 2>&1)"
check_exposure "hardening of trialwatch-metrics.service" 1.0 \
  "$(ct systemd-analyze security --offline=yes trialwatch-metrics.service 2>&1)"
# The sender has the network, as the fleet drop-in gives the daemon.
check_exposure "hardening of trialwatch-webhooks.service" 1.5 \
  "$(ct systemd-analyze security --offline=yes trialwatch-webhooks.service 2>&1)"
# The gateway accepts IP connections, on the socket systemd passes it; no network of its own.
check_exposure "hardening of trialwatch-http.service" 1.0 \
  "$(ct systemd-analyze security --offline=yes trialwatch-http.service 2>&1)"

# The same with the fleet drop-in applied (docs/fleet.md): the unit and the drop-in as
# installed, in a folder of their own, so that the running service stays single-host.
OUT=$(ct sh -c 'd=$(mktemp -d) && mkdir "$d/trialwatch.service.d" \
  && cp /usr/lib/systemd/system/trialwatch.service "$d/" \
  && cp /usr/share/doc/trialwatch/examples/trialwatch-fleet.conf "$d/trialwatch.service.d/fleet.conf" \
  && systemd-analyze security --offline=yes "$d/trialwatch.service"; rm -rf "$d"' 2>&1)
check_exposure "hardening with the fleet drop-in" 1.5 "$OUT"

if ct getent passwd trialwatch > /dev/null && ct getent group trialwatch > /dev/null \
  && ct getent group trialwatch-admin > /dev/null; then
  pass "sysusers.d made user trialwatch and groups trialwatch, trialwatch-admin"
else
  fail "sysusers.d made user trialwatch and groups trialwatch, trialwatch-admin" \
    "$(ct getent passwd trialwatch; ct getent group trialwatch trialwatch-admin)"
fi
GROUPS_OF_SENDER=$(ct id -nG trialwatch-webhooks 2>&1 | tr ' ' '\n' | sort | tr '\n' ' ')
if [ "$GROUPS_OF_SENDER" = "trialwatch trialwatch-admin trialwatch-webhooks " ]; then
  pass "sysusers.d made user trialwatch-webhooks, in groups trialwatch and trialwatch-admin"
else
  fail "sysusers.d made user trialwatch-webhooks, in groups trialwatch and trialwatch-admin" "$GROUPS_OF_SENDER"
fi
GROUPS_OF_GATEWAY=$(ct id -nG trialwatch-http 2>&1 | tr ' ' '\n' | sort | tr '\n' ' ')
if [ "$GROUPS_OF_GATEWAY" = "trialwatch trialwatch-admin trialwatch-http " ]; then
  pass "sysusers.d made user trialwatch-http, in groups trialwatch and trialwatch-admin"
else
  fail "sysusers.d made user trialwatch-http, in groups trialwatch and trialwatch-admin" "$GROUPS_OF_GATEWAY"
fi

OUT=$(ct journalctl --update-catalog 2>&1) || fail "journalctl --update-catalog" "$OUT"
# Enabling the service enables trialwatch-report.socket too (Also=); the timer and the gateway's
# socket stay disabled.
OUT=$(ct systemctl enable trialwatch.socket trialwatch.service 2>&1)
RC=$?
ENABLED=$(ct systemctl is-enabled trialwatch.socket trialwatch.service trialwatch-report.socket \
  trialwatch-metrics.timer trialwatch-http.socket 2>&1 | tr '\n' ' ')
if [ $RC -eq 0 ] && [ "$ENABLED" = "enabled enabled enabled disabled disabled " ]; then
  pass "systemctl enable trialwatch.socket trialwatch.service (and trialwatch-report.socket; not trialwatch-metrics.timer nor trialwatch-http.socket)"
else
  fail "systemctl enable trialwatch.socket trialwatch.service" \
    "$(echo "$OUT" | tr '\n' ' '); is-enabled (socket, service, report socket, timer, gateway's socket): $ENABLED"
fi
