#!/usr/bin/env bash
# The systemd peer's machine: boots the end-to-end test's container (Tests/e2e/container.sh,
# Debian 12 with systemd 252 under systemd-nspawn), writes "CONTAINER_INIT_PID ROOT" to INFO
# once it runs, and holds it until standard input is closed (or a signal comes); container.sh
# then stops the container and removes its root. Where it cannot boot, container.sh prints a
# SKIP (or FAIL) line and this script exits without writing INFO.
#
#   systemd.sh SCRATCH INFO      (run from the checkout, as root)

set -uo pipefail
if [ "$(id -u)" -ne 0 ]; then
  echo "SKIP: e2e: needs root (systemd-nspawn)"
  exit 0
fi
REPO=$PWD
SCRATCH=$1
INFO=$2
mkdir -p "$SCRATCH" || exit 1
SCRATCH=$(cd "$SCRATCH" && pwd)
NAME=trialwatch-peers
JOURNAL=$REPO/Tests/e2e/journal.py
START_NS=$(date +%s%N)
# shellcheck source=../../Tests/e2e/checks.sh
. "$REPO/Tests/e2e/checks.sh"
# shellcheck source=../../Tests/e2e/container.sh
. "$REPO/Tests/e2e/container.sh"

container_root
container_boot
echo "$CPID $ROOT" > "$INFO.tmp" && mv "$INFO.tmp" "$INFO"
while read -r _; do :; done
