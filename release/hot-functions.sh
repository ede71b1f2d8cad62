#!/bin/bash
# Writes the list of the program's functions that run in a typical life, hottest first, for the
# linker to place together (lld's --symbol-ordering-file; make release uses release/hot-functions.txt).
# The kernel maps a program's code in blocks around each page it touches, so functions that run
# scattered among ones that never run keep most of the code resident; gathered, they keep a few
# MB (docs/footprint.md).
#
#   release/hot-functions.sh BINARY OUTPUT
#
# BINARY is an unstripped release trialwatchd. It runs under valgrind's callgrind in a temporary
# folder: the daemon from start to READY (phase 1), then serving a client's requests and going
# idle (phase 2); then the client itself, trialwatchctl, for a few commands (phase 3). OUTPUT gets
# the functions of BINARY that ran, phase by phase, each phase's by instructions run, most first.
# The order changes no behaviour: a function missing from the list (new, renamed) is placed after
# the listed ones, as if the list were older. Needs valgrind; about 30 seconds.
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 BINARY OUTPUT" >&2; exit 2; }
BINARY=$(readlink -f "$1")
OUTPUT=$2
# The scratch folder and the daemon's pid, both cleaned up on exit.
# shellcheck source=bench/callgrind-daemon.sh
. "$(dirname "$0")/../bench/callgrind-daemon.sh"
WORK=$scratch

cp "$BINARY" "$WORK/trialwatchd"
ln -s trialwatchd "$WORK/trialwatchctl"
mkdir "$WORK/state"
: > "$WORK/trialwatch.conf"
export TRIALWATCH_SOCKET=$WORK/io.trialwatch
CALLGRIND=(valgrind --tool=callgrind --demangle=no -q)
ctl() { "$WORK/trialwatchctl" "$@" > /dev/null; }

"${CALLGRIND[@]}" --callgrind-out-file="$WORK/daemon.out" "$WORK/trialwatchd" --config "$WORK/trialwatch.conf" \
  --state-dir "$WORK/state" --socket "$TRIALWATCH_SOCKET" > "$WORK/daemon.log" 2>&1 &
pid=$!
# The socket answers once the daemon is ready; under valgrind that takes a second or two.
for _ in $(seq 600); do
  ctl daemon-status 2> /dev/null && break
  kill -0 "$pid" 2> /dev/null || { cat "$WORK/daemon.log" >&2; exit 1; }
  sleep 0.1
done
callgrind_control -d ready "$pid" > /dev/null 2>&1

ctl start acme-1 --duration 14d --reminders 3d,1d
ctl start acme-2 --duration 1d
ctl status acme-1
ctl status acme-1 --json
ctl list
ctl plan acme-1
ctl extend acme-1 --by 1d
ctl end acme-2 --outcome cancelled
ctl export 2> /dev/null
ctl daemon-status
# The engine gives its store pages and freed heap back 1 s after the last write.
sleep 2
callgrind_control -d served "$pid" > /dev/null 2>&1
kill -TERM "$pid"
wait "$pid" || true
pid=

"${CALLGRIND[@]}" --callgrind-out-file="$WORK/ctl-status.out" "$WORK/trialwatchctl" status acme-1 > /dev/null 2>&1 || true
"${CALLGRIND[@]}" --callgrind-out-file="$WORK/ctl-list.out" "$WORK/trialwatchctl" list > /dev/null 2>&1 || true

# callgrind_annotate lists `Ir (share)  file:function [object]`, most instructions first (the
# object is not always printed: the libraries' functions go by not being defined in BINARY); the
# dumps are numbered in the order they were taken.
nm --defined-only "$WORK/trialwatchd" | awk '{ print $NF }' | sort -u > "$WORK/defined"
for profile in "$WORK"/daemon.out.1 "$WORK"/daemon.out.2 "$WORK"/ctl-status.out "$WORK"/ctl-list.out; do
  callgrind_annotate --threshold=100 --inclusive=no "$profile" 2> /dev/null \
    | awk '/^ *[0-9,]+ +\( *[0-9.]+%\) / && !/PROGRAM TOTALS/ {
        name = $0; sub(/^ *[0-9,]+ +\( *[0-9.]+%\) +/, "", name); sub(/ \[.*$/, "", name); sub(/^[^:]*:/, "", name)
        print name
      }'
done | awk 'NR == FNR { defined[$0] = 1; next } ($0 in defined) && !seen[$0]++' "$WORK/defined" - > "$OUTPUT.tmp"
mv "$OUTPUT.tmp" "$OUTPUT"
echo "$OUTPUT: $(wc -l < "$OUTPUT") functions" >&2
