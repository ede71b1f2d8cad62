#!/usr/bin/env bash
# The instructions trialwatchd runs to fire a due event, counted by valgrind's callgrind: what
# the fire path costs where its timed figures (store_fire_100k, engine_fire_lateness_p50) move
# by 5 % or more from run to run on a shared 2-core machine. For make bench (docs/benchmarks.md).
#
#   bench/fire-instructions.sh DAEMON [BASELINE_DAEMON]
#
# Each daemon starts uninstrumented on an empty store. Over its socket (Debian's python3, the
# standard library only) trials without reminders are started, each ending at a whole second
# some 20 s ahead; callgrind counts from before the first end until every event is delivered
# and its delivery recorded:
#   - burst:  5,000 trials ending in the same second, so the events are taken and committed
#             in batches as the engine forms them (the work of store_fire_100k);
#   - single: 20 trials ending one a second, so each event is its own timer wake, commit and
#             delivery (the work engine_fire_lateness_p50 times).
# Counted are every thread's instructions, the GetStatus polls that watch for the end
# included (the same for every build), less the memory release that follows a quiet second,
# divided by the events. Prints
#   fire_instructions_burst: N instr          fire_instructions_single: N instr
#   and the same with _baseline for BASELINE_DAEMON, when given.
# FIRE_KEEP=DIR keeps the callgrind files there (callgrind.burst.out, ...), to compare
# builds function by function with callgrind_annotate. Needs valgrind and python3; about two
# minutes a daemon.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 DAEMON [BASELINE_DAEMON]" >&2; exit 2; }
python=${PYTHON:-/usr/bin/python3}
# shellcheck source=bench/callgrind-daemon.sh
. "$(dirname "$0")/callgrind-daemon.sh"

# The client: starts COUNT trials ending SPACING seconds apart from a whole second LEAD seconds
# or more ahead (pipelined, one connection), turns callgrind's instrumentation on before the
# first end, polls GetStatus once a second until no event is pending and every trial expired,
# waits for every event's line in the daemon's log (it logs to standard error here, as outside
# systemd) and for the commit that records the deliveries, then turns it off.
client=$(
  cat << 'EOF'
import datetime, json, math, socket, subprocess, sys, time
path, log, pid = sys.argv[1], sys.argv[2], sys.argv[3]
count, spacing, lead = int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
sock.connect(path)
pending = b""
def replies(n):
    global pending
    out = []
    while len(out) < n:
        while b"\0" not in pending:
            chunk = sock.recv(1 << 16)
            if not chunk:
                sys.exit("error: the daemon closed the connection")
            pending += chunk
        message, pending = pending.split(b"\0", 1)
        reply = json.loads(message)
        if "error" in reply:
            sys.exit(f"error: the daemon answered {reply}")
        out.append(reply.get("parameters", {}))
    return out
def send(method, parameters):
    sock.sendall(json.dumps({"method": "io.trialwatch.Trials." + method, "parameters": parameters}).encode() + b"\0")
first = math.ceil(time.time()) + lead
stamp = lambda t: datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
for start in range(0, count, 500):
    batch = range(start, min(count, start + 500))
    for i in batch:
        send("StartTrial", {"subject": f"fire-{spacing}-{i}", "endsAt": stamp(first + i * spacing), "reminders": []})
    replies(len(batch))
if time.time() > first - 2:
    sys.exit(f"error: the trials were started too late for their ends ({lead} s ahead)")
subprocess.run(["callgrind_control", "-i", "on", pid], check=True, capture_output=True)
time.sleep(max(0, first + (count - 1) * spacing - time.time()))
while True:
    send("GetStatus", {})
    status = replies(1)[0]
    if status["pendingEvents"] == 0 and status["trials"].get("expired", 0) >= count:
        break
    time.sleep(1)
# Every event delivered (a line of its own on the daemon's standard error), then the
# deliveries recorded: their commit follows at once; 5 s is ample under valgrind.
while sum(1 for line in open(log, errors="replace") if "trialwatchd.events:" in line) < count:
    time.sleep(1)
time.sleep(5)
subprocess.run(["callgrind_control", "-i", "off", pid], check=True, capture_output=True)
EOF
)

# measure DAEMON SUFFIX: prints the two figures for DAEMON.
measure() {
  local daemon=$1 suffix=$2 scenario name count spacing
  for scenario in burst:5000:0 single:20:1; do
    IFS=: read -r name count spacing <<< "$scenario"
    local work total release
    work=$(mktemp -d "$scratch/run.XXXX")
    callgrind_start "$daemon" "$work"
    "$python" -c "$client" "$work/socket" "$work/daemon.log" "$pid" "$count" "$spacing" 20
    callgrind_stop "$work"
    total=$counted
    # Less the memory release a quiet second after the last write (the wake's closure in
    # MemoryDuty.arm, or in scheduleMemoryRelease before the engine's duties, whatever it
    # calls): housekeeping after any write, not the fire
    # path, and under valgrind, whose mappings fill /proc/self/smaps, most of the count.
    release=$(callgrind_annotate --inclusive=yes "$work/callgrind.out" \
      | awk '/(scheduleMemoryRelease|MemoryDutyC3arm).*yycfU_ / {gsub(",", "", $1); if ($1 > m) m = $1} END {print m + 0}')
    echo "fire_instructions_$name$suffix: $(((total - release) / count)) instr"
    [ -z "${FIRE_KEEP:-}" ] || cp "$work/callgrind.out" "$FIRE_KEEP/callgrind.$name$suffix.out"
  done
}

measure "$1" ""
[ $# -lt 2 ] || measure "$2" _baseline
