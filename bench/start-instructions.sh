#!/usr/bin/env bash
# The instructions trialwatchd runs for a durable StartTrial, counted by valgrind's callgrind:
# a count of the work a start costs that the machine's load does not move, where the rate of
# starts (control_start_pipelined_rps_4) moves by a tenth or more from run to run on a shared
# 2-core machine. For make bench (docs/benchmarks.md).
#
#   bench/start-instructions.sh BENCH DAEMON [BASELINE_DAEMON]
#
# Each daemon starts uninstrumented on an empty store; the control client of BENCH
# (trialwatch-bench --control-client) warms it up with 4 × 200 pipelined starts, then callgrind
# counts from the start to the end of 4 clients × 2,000 starts, 32 in flight each (and their
# warm-up calls of 200 one at a time: the same for every build). Prints
#   control_start_instructions_4: N instr            (DAEMON; instructions a start, every thread)
#   control_start_instructions_4_baseline: N instr   (BASELINE_DAEMON, when given)
# Needs valgrind; about a minute a daemon.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 BENCH DAEMON [BASELINE_DAEMON]" >&2; exit 2; }
bench=$1
clients=4
calls=2000
# shellcheck source=bench/callgrind-daemon.sh
. "$(dirname "$0")/callgrind-daemon.sh"

# measure DAEMON NAME: prints NAME's line.
measure() {
  local daemon=$1 name=$2 work total
  work=$(mktemp -d "$scratch/run.XXXX")
  callgrind_start "$daemon" "$work"
  "$bench" --control-client "$work/socket" start $clients 200 32 > /dev/null
  callgrind_control -i on "$pid" > /dev/null 2>&1
  "$bench" --control-client "$work/socket" start $clients $calls 32 > /dev/null
  callgrind_control -i off "$pid" > /dev/null 2>&1
  callgrind_stop "$work"
  total=$counted
  # The starts counted: each client's warm-up calls and its calls.
  local starts=$((clients * (calls + 200)))
  echo "$name: $((total / starts)) instr"
}

measure "$2" control_start_instructions_4
[ $# -lt 3 ] || measure "$3" control_start_instructions_4_baseline
