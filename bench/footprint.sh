#!/bin/bash
# The two ways to install the Swift runtime once, measured side by side (docs/footprint.md,
# "One program, not a shared runtime"): one static multi-call program (trialwatchctl a link
# to trialwatchd), or a program linked against the runtime's shared libraries, which would be
# installed beside it.
#
#   bench/footprint.sh [SCRATCH]    builds both in SCRATCH (default .build-footprint), prints
#                                   `name: value unit` lines: installed bytes (binary stripped,
#                                   plus the runtime's libraries for the shared build), the
#                                   client's start-up (median of 41 runs of trialwatchctl
#                                   --help) and an idle daemon's resident memory
set -euo pipefail
cd "$(dirname "$0")/.."
SCRATCH=${1:-.build-footprint}
SWIFT=${SWIFT:-swift}
mkdir -p "$SCRATCH"

build() { # NAME FLAGS...
  local name=$1
  shift
  "$SWIFT" build -c release --scratch-path "$SCRATCH/$name" --product trialwatchd "$@" > "$SCRATCH/$name.log" 2>&1 \
    || { tail -n 20 "$SCRATCH/$name.log" >&2; exit 1; }
  mkdir -p "$SCRATCH/$name-bin"
  strip -o "$SCRATCH/$name-bin/trialwatchd" "$SCRATCH/$name/release/trialwatchd"
  ln -sfn trialwatchd "$SCRATCH/$name-bin/trialwatchctl"
}

# Milliseconds, median of 41 starts of `trialwatchctl --help` (start, parse, print, exit).
startup_ms() {
  python3 - "$1" << 'PY'
import statistics, subprocess, sys, time
runs = []
for _ in range(41):
    start = time.perf_counter()
    subprocess.run([sys.argv[1], "--help"], check=True, stdout=subprocess.DEVNULL)
    runs.append((time.perf_counter() - start) * 1000)
print(f"{statistics.median(runs):.2f}")
PY
}

# Resident kB of an idle daemon with an empty store, once it answers: VmRSS RssFile RssAnon.
idle_rss() {
  local bin=$1 state
  state=$(mktemp -d)
  "$bin/trialwatchd" --config /dev/null --state-dir "$state/state" --socket "$state/sock" 2> /dev/null &
  local pid=$!
  for _ in $(seq 1 500); do
    "$bin/trialwatchctl" daemon-status --socket "$state/sock" > /dev/null 2>&1 && break
  done
  awk '/^(VmRSS|RssFile|RssAnon):/ { printf "%s ", $2 }' "/proc/$pid/status"
  kill "$pid"
  wait "$pid" 2> /dev/null || true
  rm -rf "$state"
}

report() { # NAME BYTES BIN
  local name=$1 bytes=$2 bin=$3 rss
  echo "footprint_${name}_installed_kb: $((bytes / 1024)) kB"
  echo "footprint_${name}_ctl_start_ms: $(startup_ms "$bin/trialwatchctl") ms"
  read -r -a rss <<< "$(idle_rss "$bin")"
  echo "footprint_${name}_daemon_rss_idle_kb: ${rss[0]} kB"
  echo "footprint_${name}_daemon_rss_idle_file_kb: ${rss[1]} kB"
  echo "footprint_${name}_daemon_rss_idle_anon_kb: ${rss[2]} kB"
}

# Both linked as make release links (lld, packed relocations, nothing exported).
LINK=(-Xswiftc -use-ld=lld -Xlinker -z -Xlinker now -Xlinker -z -Xlinker pack-relative-relocs
  -Xlinker --no-export-dynamic)
build static --static-swift-stdlib "${LINK[@]}"
report static "$(stat -c %s "$SCRATCH/static-bin/trialwatchd")" "$SCRATCH/static-bin"

build shared "${LINK[@]}"
libraries=$(ldd "$SCRATCH/shared-bin/trialwatchd" | awk '$3 ~ /swift/ { print $3 }')
bytes=$(stat -c %s "$SCRATCH/shared-bin/trialwatchd")
for library in $libraries; do bytes=$((bytes + $(stat -L -c %s "$library"))); done
echo "# shared: the runtime's libraries: $(echo "$libraries" | xargs -n 1 basename | tr '\n' ' ')"
report shared "$bytes" "$SCRATCH/shared-bin"
