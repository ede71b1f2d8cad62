# Sourced by bench/start-instructions.sh and bench/fire-instructions.sh: a trialwatchd under
# valgrind's callgrind, with its instrumentation off until the caller turns it on
# (`callgrind_control -i on "$pid"`). Sourcing it (release/hot-functions.sh does too, for a run
# of its own) checks for valgrind and makes the folder scratch, removed on exit with the daemon
# whose process is in pid stopped.

command -v valgrind > /dev/null || { echo "error: needs valgrind (apt-get install valgrind)" >&2; exit 1; }
scratch=$(mktemp -d)
pid=
callgrind_cleanup() {
  [ -z "$pid" ] || kill "$pid" 2> /dev/null || true
  rm -rf "$scratch"
}
trap callgrind_cleanup EXIT

# callgrind_start DAEMON WORK: starts DAEMON on an empty configuration and store in the
# folder WORK (its socket WORK/socket, its output WORK/daemon.log, the counts
# WORK/callgrind.out), sets pid to valgrind's process and returns once the socket is up.
callgrind_start() {
  local daemon=$1 work=$2 waited=0
  : > "$work/trialwatch.conf"
  valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$work/callgrind.out" -q \
    "$daemon" --config "$work/trialwatch.conf" --state-dir "$work/state" --socket "$work/socket" \
    > "$work/daemon.log" 2>&1 &
  pid=$!
  until [ -S "$work/socket" ]; do
    kill -0 "$pid" 2> /dev/null || { echo "error: $daemon ended before its socket was up:" >&2; cat "$work/daemon.log" >&2; exit 1; }
    [ $waited -lt 1200 ] || { echo "error: $daemon has no socket after 2 minutes under valgrind" >&2; exit 1; }
    sleep 0.1
    waited=$((waited + 1))
  done
}

# callgrind_stop WORK: stops the daemon callgrind_start started, waits for callgrind to write
# its counts, and sets counted to the instructions counted, every thread. (Not in a command
# substitution: only this shell can wait for the daemon.)
callgrind_stop() {
  local work=$1
  kill -TERM "$pid"
  wait "$pid" || true
  pid=
  counted=$(callgrind_annotate "$work/callgrind.out" | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')
  [ -n "$counted" ] || { echo "error: no instruction count in $work/callgrind.out" >&2; exit 1; }
}
