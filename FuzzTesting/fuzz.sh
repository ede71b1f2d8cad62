#!/usr/bin/env bash
# make fuzz: builds the fuzz targets with libFuzzer and AddressSanitizer (release), then runs
# each for FUZZ_SECONDS (default 60) over a scratch copy of its corpus, its committed corpus and
# its regressions. An input that crashes a target, or fails one of its checks, is written to
# Regressions/<target>/ and the run goes on to the next target; the status is 1 if any did.
# FUZZ_TARGETS="control text" picks targets; FUZZ_JOBS=N runs N processes of each at once.
# docs/testing.md, "Fuzzing".
set -euo pipefail
cd "$(dirname "$0")"
SWIFT=${SWIFT:-swift}
seconds=${FUZZ_SECONDS:-60}
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
  mkdir -p "$scratch/$target" "Regressions/$target"
  options=(-max_total_time="$seconds" -timeout=30 -print_final_stats=1 -artifact_prefix="Regressions/$target/")
  [ -f "Dictionaries/$target.dict" ] && options+=(-dict="Dictionaries/$target.dict")
  [ -n "${FUZZ_JOBS:-}" ] && options+=(-jobs="$FUZZ_JOBS" -workers="$FUZZ_JOBS")
  echo "== fuzz-$target: ${seconds}s"
  if ! "$binary" "${options[@]}" "$scratch/$target" "Corpora/$target" "Regressions/$target"; then
    found+=("$target")
  fi
done
if [ ${#found[@]} -gt 0 ]; then
  echo "fuzz.sh: failed: ${found[*]}. An input that crashed a target or failed its checks is in" \
    "FuzzTesting/Regressions/<target>/ (crash-*, timeout-*, oom-*): give it a name, fix the bug, add a" \
    "unit test naming it, and commit them" >&2
  exit 1
fi
echo "fuzz.sh: no crash in ${seconds}s per target ($targets)"
