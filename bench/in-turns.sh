#!/usr/bin/env bash
# The in-process figures of two builds, in turns, for make bench with
# TRIALWATCH_BENCH_BASELINE_BENCH: ROUNDS rounds (default 3), each running the SECTIONS
# (default store,engine) of the baseline's trialwatch-bench, then of this build's. A single
# run of these figures moves by a tenth or more on a shared 2-core machine; the median of
# runs made in turns compares the builds. Prints, for every figure of the sections,
#   NAME_turns: MEDIAN UNIT            (this build)
#   NAME_turns_baseline: MEDIAN UNIT   (the baseline)
# Usage: bench/in-turns.sh CURRENT_BENCH BASELINE_BENCH
set -euo pipefail
current=$1
baseline=$2
rounds=${ROUNDS:-3}
sections=${SECTIONS:-store,engine}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
for round in $(seq "$rounds"); do
  echo "# in turns: round $round of $rounds: baseline $baseline" >&2
  TRIALWATCH_BENCH=$sections "$baseline" | grep -v '^#' >> "$scratch/baseline"
  echo "# in turns: round $round of $rounds: current $current" >&2
  TRIALWATCH_BENCH=$sections "$current" | grep -v '^#' >> "$scratch/current"
done
python3 - "$scratch" <<'PY'
import statistics, sys
for build, suffix in (("current", "_turns"), ("baseline", "_turns_baseline")):
    values, units = {}, {}
    for line in open(f"{sys.argv[1]}/{build}"):
        name, _, rest = line.partition(":")
        fields = rest.split()
        if not fields:
            continue
        values.setdefault(name, []).append(float(fields[0]))
        units[name] = " ".join(fields[1:])
    for name, found in values.items():
        median = statistics.median(found)
        print(f"{name}{suffix}: {median:.6g} {units[name]}".rstrip())
PY
