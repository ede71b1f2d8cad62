#!/usr/bin/env bash
# The peers harness on tiny workloads (a few events over a few seconds, 100 pending, the
# peers in parallel), so that it cannot rot: fails when the harness fails, when a line of its
# output is malformed, or when a figure is missing (trialwatch's and each peer's nine, unless
# the peer printed a SKIP line). `make bench-peers-check` runs it; `make test` too.
#
#   check.sh PYTHON TRIALWATCHD SCRATCH

set -uo pipefail
PYTHON=$1
DAEMON=$2
SCRATCH=$3
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$SCRATCH" || exit 1
OUT=$SCRATCH/check.out
METRICS="lateness_p50 lateness_p99 lateness_max rss_100k disk_100k ingest_10k ingest_10k_16_clients idle_wakeups_per_min burst_10k_done"
PEERS="at systemd postgres-1s postgres-10s sqlite-1s sqlite-10s redis-1s"

"$PYTHON" "$HERE/peers.py" --daemon "$DAEMON" --scratch "$SCRATCH" --parallel \
  --events 20 --window 3 --pending 100 --slow-pending 20 --ingest 20 --clients 4 --burst 20 --idle 3 > "$OUT"
status=$?
cat "$OUT"
if [ "$status" -ne 0 ]; then
  echo "FAIL: bench-peers-check: the harness exited with status $status" >&2
  exit 1
fi

failed=0
bad() {
  echo "FAIL: bench-peers-check: $1" >&2
  failed=1
}
number='-?[0-9]+(\.[0-9]+)?'
while IFS= read -r line; do
  [[ $line =~ ^(trialwatch|peer_[a-z0-9-]+)_[a-z0-9_]+:\ $number\ (ms|s|MB|wakeups/min)$ ]] && continue
  [[ $line =~ ^ratio_[a-z0-9_]+_[a-z0-9-]+:\ $number$ ]] && continue
  [[ $line =~ ^SKIP:\ peer_[a-z0-9-]+:\ .+$ ]] && continue
  [[ $line =~ ^#\ .+$ ]] && continue
  bad "malformed line: $line"
done < "$OUT"

for metric in $METRICS; do
  grep -q "^trialwatch_$metric: " "$OUT" || bad "no trialwatch_$metric"
done
for peer in $PEERS; do
  grep -q "^SKIP: peer_$peer: " "$OUT" && continue
  for metric in $METRICS; do
    grep -q "^peer_${peer}_$metric: " "$OUT" || bad "no peer_${peer}_$metric"
    grep -q "^ratio_${metric}_$peer: \|^# ratio_${metric}_$peer: " "$OUT" || bad "no ratio_${metric}_$peer"
  done
done
[ "$failed" -eq 0 ] || exit 1
echo "PASS: bench-peers-check"
