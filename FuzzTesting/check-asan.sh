#!/usr/bin/env bash
# Checks that the fuzz build instrumented trialwatch's own modules with AddressSanitizer
# (FuzzTesting/fuzz.sh): each of their object files calls into the ASan runtime. A build
# without it still fuzzes, but finds no memory error that does not crash on its own; exit 1,
# naming the files, so that no run is taken for one with AddressSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.build/release"
missing=()
for module in TrialCore TrialControl TrialControlServer TrialEngine TrialDaemon TrialStore TrialFuzzTargets; do
  for object in "$module".build/*.o; do
    symbols=$(nm -u "$object")
    [[ $symbols == *__asan_init* ]] || missing+=("$object")
  done
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "check-asan.sh: ${#missing[@]} object files without AddressSanitizer, e.g. ${missing[*]:0:3}" >&2
  exit 1
fi
echo "check-asan.sh: trialwatch's modules carry AddressSanitizer"
