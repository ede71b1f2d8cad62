#!/bin/sh
# What ships carries neither Foundation proper nor ICU (docs/footprint.md).
#
#   Tests/lint/foundation.sh sources     no `import Foundation` in Sources/ outside the folders
#                                        Tests/lint/foundation-allowed names (test support and
#                                        build tools, never linked into what is installed)
#   Tests/lint/foundation.sh BINARY...   no symbol of Foundation, FoundationInternationalization
#                                        or ICU (nm), and no ICU data, in each unstripped BINARY
set -eu
cd "$(dirname "$0")/../.."
status=0

if [ "${1:-}" = sources ]; then
  allowed=$(grep -v '^#' Tests/lint/foundation-allowed | grep . | sed 's|/*$|/|')
  for file in $(grep -rlE '^(@preconcurrency |@_exported |public |internal )?import (struct |class |enum |func )?(Foundation|FoundationInternationalization|FoundationNetworking|FoundationXML)(\.| |$)' Sources --include='*.swift' | sort); do
    ok=no
    for folder in $allowed; do
      case "$file" in "$folder"*) ok=yes ;; esac
    done
    if [ "$ok" = no ]; then
      echo "error: $file imports Foundation; use FoundationEssentials (or add its folder to Tests/lint/foundation-allowed if it is never shipped)" >&2
      status=1
    fi
  done
  [ "$status" = 0 ] && echo "foundation lint: no import of Foundation outside $(echo $allowed | wc -w) allowed test and tool folders"
  exit $status
fi

[ $# -gt 0 ] || { echo "usage: $0 sources | BINARY..." >&2; exit 2; }
for binary in "$@"; do
  if [ ! -f "$binary" ]; then echo "error: $binary: no such file; run make release" >&2; exit 1; fi
  symbols=$(nm "$binary" 2>/dev/null | grep -cE 'icu_[0-9]+|ucol_|udat_|ucal_|ubrk_|\$s10Foundation|\$s31FoundationInternationalization' || true)
  if [ -z "$(nm "$binary" 2>/dev/null | head -1)" ]; then
    echo "error: $binary has no symbols (stripped?): check the unstripped release build" >&2
    status=1
  elif [ "$symbols" -ne 0 ]; then
    echo "error: $binary holds $symbols symbols of Foundation or ICU, e.g.:" >&2
    nm "$binary" | grep -E 'icu_[0-9]+|ucol_|udat_|ucal_|ubrk_|\$s10Foundation|\$s31FoundationInternationalization' | head -5 >&2
    status=1
  elif grep -qa 'icudt[0-9]' "$binary"; then
    echo "error: $binary holds ICU's data (icudt)" >&2
    status=1
  else
    echo "foundation lint: $binary holds no symbol of Foundation or ICU"
  fi
done
exit $status
