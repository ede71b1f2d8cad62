# shellcheck shell=bash
# e2e.sh, step 08 (sourced): socket activation, and the daemon without the socket unit.

ctt 60 systemctl stop trialwatch.service 2> /dev/null
STATES=$(ct systemctl is-active trialwatch.socket trialwatch.service | tr '\n' ' ')
OUT=$(ctt 60 trialwatchctl daemon-status 2>&1)
RC=$?
if [ "$STATES" = "active inactive " ] && [ $RC -eq 0 ] && [ "$(show ActiveState)" = active ]; then
  pass "socket activation: trialwatchctl daemon-status starts the stopped service"
else
  fail "socket activation: trialwatchctl daemon-status starts the stopped service" \
    "before: socket, service $STATES; daemon-status exit $RC: $(echo "$OUT" | head -n 2 | tr '\n' ' ');" \
    "service now $(show ActiveState)"
fi

# --- Without the socket unit ---------------------------------------------------------------

# The daemon binds Socket= itself: in RuntimeDirectory=, group trialwatch, mode 0660.
# trialwatch-report.socket stays: the daemon is passed the metrics socket alone, and still
# binds its control socket.
ctt 60 systemctl stop trialwatch.service trialwatch.socket 2> /dev/null
ct systemctl mask --runtime trialwatch.socket > /dev/null 2>&1
OUT=$(ctt 60 systemctl start trialwatch.service 2>&1)
RC=$?
SOCKET=$(ct stat -c '%U:%G %a %F' /run/trialwatch/io.trialwatch 2>&1)
READ=$(as e2e-reader list 2>&1)
READ_RC=$?
if [ $RC -eq 0 ] && [ "$SOCKET" = "trialwatch:trialwatch 660 socket" ] && [ $READ_RC -eq 0 ] \
  && [ "$(ct systemctl is-active trialwatch.socket)" != active ]; then
  pass "without trialwatch.socket the daemon binds the socket itself ($SOCKET)"
else
  fail "without trialwatch.socket the daemon binds the socket itself" \
    "start: rc $RC $(echo "$OUT" | head -n 3 | tr '\n' ' '); socket: $SOCKET; reader: exit $READ_RC $(echo "$READ" | head -n 1)"
fi
ctt 60 systemctl stop trialwatch.service
ct systemctl unmask --runtime trialwatch.socket > /dev/null 2>&1
ctt 60 systemctl start trialwatch.socket trialwatch.service
