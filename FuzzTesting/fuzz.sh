#!/usr/bin/env bash
# make fuzz: builds the fuzz targets with libFuzzer and AddressSanitizer (release), then runs
# each for FUZZ_SECONDS (default 60) over a scratch copy of its corpus, its committed corpus and
# its regressions. An input that crashes a target, or fails one of its checks, is written to
# Regressions/<target>/ and the run goes on to the next target; the status is 1 if any did.
# FUZZ_TARGETS="control text" picks targets; FUZZ_JOBS=N runs N processes of each at once.
#
# fuzz.sh --check (make fuzz-check, part of make test): the same build, then each target runs its
# committed corpus and regressions and FUZZ_CHECK_RUNS (default 2000) more inputs from a fixed
# seed, a few seconds each, with AddressSanitizer and LeakSanitizer; a finding fails the run and
# is written to .build/findings/<target>/, outside the work tree's committed files.
# docs/fuzzing.md.
set -euo pipefail
cd "$(dirname "$0")"
SWIFT=${SWIFT:-swift}
check=false
if [ "${1:-}" = --check ]; then check=true; shift; fi
[ $# -eq 0 ] || { echo "usage: fuzz.sh [--check]" >&2; exit 2; }
seconds=${FUZZ_SECONDS:-60}
check_runs=${FUZZ_CHECK_RUNS:-2000}
targets=${FUZZ_TARGETS:-"control configuration store-records store-file text"}
scratch=.build/corpora

# The coverage is named: with -O, -sanitize=fuzzer alone leaves the code uninstrumented (Swift
# 6.3 on Linux), and libFuzzer then fuzzes blind. Both sanitizers are named again, in one flag:
# SwiftPM passes its two -sanitize= flags to swiftc in no fixed order, and swiftc keeps only the
# last, so a build came out with AddressSanitizer or without it (check-asan.sh tells which).
$SWIFT build -c release --sanitize=fuzzer --sanitize=address \
  -Xswiftc -sanitize=fuzzer,address -Xswiftc -sanitize-coverage=edge,inline-8bit-counters,pc-table,trace-cmp
./check-asan.sh
# The Swift runtime's backtracer, under AddressSanitizer, reports a crash of its own instead.
export SWIFT_BACKTRACE=enable=no

found=()
for target in $targets; do
  binary=.build/release/fuzz-$target
  [ -x "$binary" ] || { echo "fuzz.sh: no target $target (targets: control configuration store-records store-file text)" >&2; exit 2; }
  options=(-timeout=30 -print_final_stats=1)
  [ -f "Dictionaries/$target.dict" ] && options+=(-dict="Dictionaries/$target.dict")
  if $check; then
    # A scratch corpus of its own each time, so that the run is the same on every machine: the
    # committed inputs, then check_runs inputs mutated from them with seed 1.
    findings=.build/findings/$target
    rm -rf "$scratch/check-$target" "$findings"
    mkdir -p "$scratch/check-$target" "$findings"
    corpora=("$scratch/check-$target" "Corpora/$target" "Regressions/$target")
    committed=$(find "Corpora/$target" "Regressions/$target" -type f | wc -l)
    options+=(-runs=$((committed + check_runs)) -seed=1 -artifact_prefix="$findings/")
    echo "== fuzz-$target: its $committed committed inputs and $check_runs more"
  else
    mkdir -p "$scratch/$target" "Regressions/$target"
    options+=(-max_total_time="$seconds" -artifact_prefix="Regressions/$target/")
    [ -n "${FUZZ_JOBS:-}" ] && options+=(-jobs="$FUZZ_JOBS" -workers="$FUZZ_JOBS")
    echo "== fuzz-$target: ${seconds}s"
    corpora=("$scratch/$target" "Corpora/$target" "Regressions/$target")
  fi
  if ! "$binary" "${options[@]}" "${corpora[@]}"; then
    found+=("$target")
  fi
done
if [ ${#found[@]} -gt 0 ]; then
  if $check; then
    echo "fuzz.sh: failed: ${found[*]}. The input is in FuzzTesting/.build/findings/<target>/ (crash-*," \
      "leak-*, timeout-*, oom-*); FuzzTesting/.build/release/fuzz-<target> FILE runs it again. Give it a" \
      "name in Regressions/<target>/, fix the bug, add a unit test naming it, and commit them" >&2
  else
    echo "fuzz.sh: failed: ${found[*]}. An input that crashed a target or failed its checks is in" \
      "FuzzTesting/Regressions/<target>/ (crash-*, leak-*, timeout-*, oom-*): give it a name, fix the bug," \
      "add a unit test naming it, and commit them" >&2
  fi
  exit 1
fi
if $check; then
  echo "fuzz.sh: no finding in the committed inputs and $check_runs more per target ($targets)"
else
  echo "fuzz.sh: no crash in ${seconds}s per target ($targets)"
fi
