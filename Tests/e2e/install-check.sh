#!/usr/bin/env bash
# Checks `make install` and `make uninstall` without root: installs into temporary DESTDIRs
# and compares the tree with the one docs/install.md describes; checks that a second install
# keeps a changed configuration, that another PREFIX reaches the units, that the binaries
# need no Swift runtime libraries, that the units pass `systemd-analyze verify` and
# `systemd-analyze security` (exposure at most 1.0, the daemon's, the metrics service's and the
# HTTP gateway's; with the fleet drop-in, and the webhooks' sender's, which both have the network,
# at most 1.5), that
# `mandoc -T lint` finds nothing in the man pages, that the shell completions parse and
# complete, and what uninstall leaves.
#
# Prints `PASS: <name>` or `FAIL: <name>: <why>` per check, then `N passed, N failed`.
# Run it with `make install-check` (it needs the release build).

set -uo pipefail

cd "$(dirname "$0")/../.." || exit 1
REPO=$PWD
TMP=$(mktemp -d "${TMPDIR:-/tmp}/trialwatch-install-check.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT
# shellcheck source=checks.sh
. "$REPO/Tests/e2e/checks.sh"

# install_into DESTDIR [make variables...]: make install-files, quietly; output in DESTDIR.log.
install_into() {
  local destdir=$1
  shift
  make -C "$REPO" --no-print-directory install-files DESTDIR="$destdir" "$@" > "$destdir.log" 2>&1
}
uninstall_from() {
  local destdir=$1
  shift
  make -C "$REPO" --no-print-directory uninstall DESTDIR="$destdir" "$@" > "$destdir.uninstall.log" 2>&1
}
# The tree under a folder: one line per entry, "mode type path", sorted.
tree() { (cd "$1" && find . -mindepth 1 -printf '%m %y %P\n' | sort -k3); }

PAGES="man1/trialwatchctl.1 man5/trialwatch.conf.5 man8/trialwatchd.8 man8/trialwatch-webhooks.8 man8/trialwatch-http.8"
if [ ! -x .build-release/release/trialwatchd ] || [ ! -x .build-release/release/trialwatchctl ] \
  || [ ! -f .build-release/man/trialwatchd.8 ] || [ ! -f .build-release/man/trialwatch-webhooks.8 ] \
  || [ ! -f .build-release/man/trialwatch-http.8 ]; then
  fail "release build" "no binaries or pages in .build-release; run \`make install-check\`, which builds them"
  summary
  exit 1
fi

# --- A first install with the default PREFIX ------------------------------------------------

A=$TMP/default
if install_into "$A"; then
  pass "make install DESTDIR=... (PREFIX=/usr)"
else
  fail "make install DESTDIR=... (PREFIX=/usr)" "$(tail -n 5 "$A.log" | tr '\n' ' ')"
fi

EXPECTED=$TMP/expected.txt
{
  for dir in etc etc/trialwatch etc/trialwatch/trialwatch.conf.d etc/trialwatch/consumers etc/trialwatch/plans \
    etc/trialwatch/webhooks etc/trialwatch/http usr \
    usr/bin usr/libexec usr/libexec/trialwatch usr/lib usr/lib/systemd usr/lib/systemd/catalog usr/lib/systemd/system usr/lib/sysusers.d usr/share \
    usr/share/doc usr/share/doc/trialwatch usr/share/doc/trialwatch/docs usr/share/doc/trialwatch/examples \
    usr/share/doc/trialwatch/examples/plans usr/share/doc/trialwatch/examples/webhooks usr/share/man \
    usr/share/man/man1 usr/share/man/man5 usr/share/man/man8 \
    usr/share/bash-completion usr/share/bash-completion/completions usr/share/zsh \
    usr/share/zsh/vendor-completions usr/share/fish usr/share/fish/vendor_completions.d; do
    echo "755 d $dir"
  done
  for page in $PAGES; do echo "644 f usr/share/man/$page"; done
  for command in trialwatchctl trialwatchd; do
    echo "644 f usr/share/bash-completion/completions/$command"
    echo "644 f usr/share/zsh/vendor-completions/_$command"
    echo "644 f usr/share/fish/vendor_completions.d/$command.fish"
  done
  echo "644 f etc/trialwatch/trialwatch.conf"
  echo "777 l usr/bin/trialwatchctl"
  echo "755 f usr/bin/trialwatchd"
  echo "777 l usr/libexec/trialwatch/trialwatch-webhooks"
  echo "777 l usr/libexec/trialwatch/trialwatch-http"
  echo "644 f usr/lib/systemd/catalog/trialwatch.catalog"
  echo "644 f usr/lib/systemd/system/trialwatch.service"
  echo "644 f usr/lib/systemd/system/trialwatch.socket"
  echo "644 f usr/lib/systemd/system/trialwatch-report.socket"
  echo "644 f usr/lib/systemd/system/trialwatch-consumer@.service"
  echo "644 f usr/lib/systemd/system/trialwatch-metrics.service"
  echo "644 f usr/lib/systemd/system/trialwatch-metrics.timer"
  echo "644 f usr/lib/systemd/system/trialwatch-webhooks.service"
  echo "644 f usr/lib/systemd/system/trialwatch-http.socket"
  echo "644 f usr/lib/systemd/system/trialwatch-http.service"
  echo "644 f usr/lib/sysusers.d/trialwatch.conf"
  echo "644 f usr/share/doc/trialwatch/README.md"
  for doc in docs/*.md; do echo "644 f usr/share/doc/trialwatch/$doc"; done
  echo "644 f usr/share/doc/trialwatch/examples/consumer.conf"
  for plan in etc/plans/*.conf; do echo "644 f usr/share/doc/trialwatch/examples/plans/${plan##*/}"; done
  for hook in etc/webhooks/*.conf; do echo "644 f usr/share/doc/trialwatch/examples/webhooks/${hook##*/}"; done
  echo "644 f usr/share/doc/trialwatch/examples/trialwatch-fleet.conf"
  echo "644 f usr/share/doc/trialwatch/examples/trialwatch-alerts.yml"
} | sort -k3 > "$EXPECTED"
if DIFF=$(diff "$EXPECTED" <(tree "$A")); then
  pass "installed tree and modes as documented"
else
  fail "installed tree and modes as documented" "$(echo "$DIFF" | grep '^[<>]' | tr '\n' ';')"
fi

same() { cmp -s "$1" "$2"; }
# The documents are installed as they are: README.md and docs/*.md; so are the sample plans and
# the sample webhook endpoint.
same_documents() {
  same README.md "$A/usr/share/doc/trialwatch/README.md" || return 1
  for doc in docs/*.md; do same "$doc" "$A/usr/share/doc/trialwatch/$doc" || return 1; done
  for plan in etc/plans/*.conf; do same "$plan" "$A/usr/share/doc/trialwatch/examples/plans/${plan##*/}" || return 1; done
  for hook in etc/webhooks/*.conf; do
    same "$hook" "$A/usr/share/doc/trialwatch/examples/webhooks/${hook##*/}" || return 1
  done
}
if same systemd/trialwatch.service "$A/usr/lib/systemd/system/trialwatch.service" \
  && same systemd/trialwatch.socket "$A/usr/lib/systemd/system/trialwatch.socket" \
  && same systemd/trialwatch-consumer@.service "$A/usr/lib/systemd/system/trialwatch-consumer@.service" \
  && same systemd/trialwatch-report.socket "$A/usr/lib/systemd/system/trialwatch-report.socket" \
  && same systemd/trialwatch-metrics.service "$A/usr/lib/systemd/system/trialwatch-metrics.service" \
  && same systemd/trialwatch-metrics.timer "$A/usr/lib/systemd/system/trialwatch-metrics.timer" \
  && same systemd/trialwatch-webhooks.service "$A/usr/lib/systemd/system/trialwatch-webhooks.service" \
  && same systemd/trialwatch-http.socket "$A/usr/lib/systemd/system/trialwatch-http.socket" \
  && same systemd/trialwatch-http.service "$A/usr/lib/systemd/system/trialwatch-http.service" \
  && same etc/consumer.conf "$A/usr/share/doc/trialwatch/examples/consumer.conf" \
  && same systemd/trialwatch-fleet.conf "$A/usr/share/doc/trialwatch/examples/trialwatch-fleet.conf" \
  && same etc/prometheus/trialwatch-alerts.yml "$A/usr/share/doc/trialwatch/examples/trialwatch-alerts.yml" \
  && same systemd/trialwatch.sysusers "$A/usr/lib/sysusers.d/trialwatch.conf" \
  && same systemd/trialwatch.catalog "$A/usr/lib/systemd/catalog/trialwatch.catalog" \
  && same etc/trialwatch.conf "$A/etc/trialwatch/trialwatch.conf" && same_documents \
  && same .build-release/release/trialwatchd "$A/usr/bin/trialwatchd" \
  && [ "$(readlink "$A/usr/bin/trialwatchctl")" = trialwatchd ] \
  && [ "$(readlink "$A/usr/libexec/trialwatch/trialwatch-webhooks")" = ../../bin/trialwatchd ] \
  && [ "$(readlink "$A/usr/libexec/trialwatch/trialwatch-http")" = ../../bin/trialwatchd ] \
  && same .build-release/man/trialwatchctl.1 "$A/usr/share/man/man1/trialwatchctl.1" \
  && same .build-release/man/trialwatch.conf.5 "$A/usr/share/man/man5/trialwatch.conf.5" \
  && same .build-release/man/trialwatchd.8 "$A/usr/share/man/man8/trialwatchd.8" \
  && same .build-release/man/trialwatch-webhooks.8 "$A/usr/share/man/man8/trialwatch-webhooks.8" \
  && same .build-release/man/trialwatch-http.8 "$A/usr/share/man/man8/trialwatch-http.8" \
  && same .build-release/completions/trialwatchctl.bash "$A/usr/share/bash-completion/completions/trialwatchctl" \
  && same .build-release/completions/trialwatchctl.zsh "$A/usr/share/zsh/vendor-completions/_trialwatchctl" \
  && same .build-release/completions/trialwatchctl.fish "$A/usr/share/fish/vendor_completions.d/trialwatchctl.fish"; then
  pass "installed files are the sources (PREFIX=/usr: nothing substituted)"
else
  fail "installed files are the sources (PREFIX=/usr: nothing substituted)" "an installed file differs"
fi

# Static Swift runtime: only glibc, libstdc++/libgcc, libsystemd and liblmdb (libpq, for fleet
# mode, is opened when a node connects, not linked).
ALLOWED='^(libc\.so\.6|libm\.so\.6|libstdc\+\+\.so\.6|libgcc_s\.so\.1|ld-linux[-a-z0-9_.]*\.so\.[0-9]+|libpthread\.so\.0|libdl\.so\.2|librt\.so\.1|libsystemd\.so\.0|liblmdb\.so\.0)$'
for binary in trialwatchd trialwatchctl; do
  NEEDED=$(readelf -d "$A/usr/bin/$binary" 2> /dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
  if [ -z "$NEEDED" ]; then
    NEEDED=$(ldd "$A/usr/bin/$binary" | awk '{ print $1 }' | grep -v '^linux-vdso' | xargs -n 1 basename)
  fi
  OTHERS=$(echo "$NEEDED" | grep -Ev "$ALLOWED")
  if [ -n "$NEEDED" ] && [ -z "$OTHERS" ]; then
    pass "$binary needs only $(echo "$NEEDED" | tr '\n' ' ')"
  else
    fail "$binary needs only glibc, libstdc++, libsystemd, liblmdb" "also: $(echo "${OTHERS:-nothing found}" | tr '\n' ' ')"
  fi
done

# One program: the link trialwatchctl runs the client, the link trialwatch-webhooks the sender,
# the link trialwatch-http the gateway, trialwatchd the daemon.
CTL_HELP=$("$A/usr/bin/trialwatchctl" --help 2>&1 | grep '^USAGE: ')
D_HELP=$("$A/usr/bin/trialwatchd" --help 2>&1 | grep '^USAGE: ')
W_HELP=$("$A/usr/libexec/trialwatch/trialwatch-webhooks" --help 2>&1 | grep '^USAGE: ')
H_HELP=$("$A/usr/libexec/trialwatch/trialwatch-http" --help 2>&1 | grep '^USAGE: ')
if echo "$CTL_HELP" | grep -q '^USAGE: trialwatchctl ' && echo "$D_HELP" | grep -q '^USAGE: trialwatchd ' \
  && echo "$W_HELP" | grep -q '^USAGE: trialwatch-webhooks ' && echo "$H_HELP" | grep -q '^USAGE: trialwatch-http '; then
  pass "usr/bin/trialwatchctl, usr/libexec/trialwatch/trialwatch-webhooks and trialwatch-http, links to trialwatchd, run the client, the sender and the gateway; trialwatchd the daemon"
else
  fail "usr/bin/trialwatchctl, usr/libexec/trialwatch/trialwatch-webhooks and trialwatch-http, links to trialwatchd, run the client, the sender and the gateway" \
    "got: $(echo "$CTL_HELP $D_HELP $W_HELP $H_HELP" | tr '\n' ' ')"
fi

if command -v systemd-analyze > /dev/null; then
  # The installed units, with the binary's path pointed into DESTDIR, as systemd would load them.
  V=$TMP/verify
  mkdir -p "$V"
  for unit in trialwatch.service trialwatch.socket trialwatch-report.socket trialwatch-metrics.service \
    trialwatch-metrics.timer trialwatch-webhooks.service trialwatch-http.socket trialwatch-http.service; do
    sed -e "s|^ExecStart=/usr/bin/trialwatchd|ExecStart=$A/usr/bin/trialwatchd|" \
      -e "s|^ExecStart=/usr/bin/trialwatchctl|ExecStart=$A/usr/bin/trialwatchctl|" \
      -e "s|^ExecStart=/usr/libexec/trialwatch/|ExecStart=$A/usr/libexec/trialwatch/|" \
      "$A/usr/lib/systemd/system/$unit" > "$V/$unit"
  done
  # An instance of the consumers' template, with its configuration in the verify folder.
  echo "COMMAND='true'" > "$V/verify.conf"
  sed -e "s|^ExecStart=/usr/bin/trialwatchctl|ExecStart=$A/usr/bin/trialwatchctl|" \
    -e "s|^EnvironmentFile=/etc/trialwatch/consumers/%i.conf|EnvironmentFile=$V/%i.conf|" \
    "$A/usr/lib/systemd/system/trialwatch-consumer@.service" > "$V/trialwatch-consumer@.service"
  OUT=$(cd "$V" && systemd-analyze verify "$V/trialwatch.service" "$V/trialwatch.socket" \
    "$V/trialwatch-report.socket" "$V/trialwatch-metrics.service" "$V/trialwatch-metrics.timer" \
    "$V/trialwatch-consumer@verify.service" "$V/trialwatch-webhooks.service" "$V/trialwatch-http.socket" \
    "$V/trialwatch-http.service" 2>&1)
  if [ $? -eq 0 ] && [ -z "$OUT" ]; then
    pass "systemd-analyze verify is clean"
  else
    fail "systemd-analyze verify is clean" "$(echo "$OUT" | tr '\n' ' ')"
  fi
  check_exposure "systemd-analyze security" 1.0 \
    "$(systemd-analyze security --offline=yes "$A/usr/lib/systemd/system/trialwatch.service" 2>&1)"
  check_exposure "systemd-analyze security of trialwatch-metrics.service" 1.0 \
    "$(systemd-analyze security --offline=yes "$A/usr/lib/systemd/system/trialwatch-metrics.service" 2>&1)"
  # The sender has the network (AF_INET, AF_INET6), which is what raises its exposure.
  check_exposure "systemd-analyze security of trialwatch-webhooks.service" 1.5 \
    "$(systemd-analyze security --offline=yes "$A/usr/lib/systemd/system/trialwatch-webhooks.service" 2>&1)"
  # The gateway accepts IP connections, but on the socket systemd passes it: it has no network of
  # its own (PrivateNetwork=yes).
  check_exposure "systemd-analyze security of trialwatch-http.service" 1.0 \
    "$(systemd-analyze security --offline=yes "$A/usr/lib/systemd/system/trialwatch-http.service" 2>&1)"
  # The service with the fleet drop-in applied, as an operator installs it
  # (/etc/systemd/system/trialwatch.service.d/fleet.conf): still valid, and its exposure, which
  # docs/fleet.md reports (TCP to the database is what it opens).
  F=$TMP/fleet
  mkdir -p "$F/trialwatch.service.d"
  cp "$V/trialwatch.service" "$V/trialwatch.socket" "$V/trialwatch-report.socket" "$F/"
  cp "$A/usr/share/doc/trialwatch/examples/trialwatch-fleet.conf" "$F/trialwatch.service.d/fleet.conf"
  OUT=$(cd "$F" && systemd-analyze verify "$F/trialwatch.service" "$F/trialwatch.socket" \
    "$F/trialwatch-report.socket" 2>&1)
  STATUS=$?
  SECURITY=$(systemd-analyze security --offline=yes "$F/trialwatch.service" 2>&1)
  if [ $STATUS -eq 0 ] && [ -z "$OUT" ] && echo "$SECURITY" | grep -q "access to the host's network"; then
    pass "systemd-analyze verify is clean with the fleet drop-in, which applies"
  else
    fail "systemd-analyze verify is clean with the fleet drop-in, which applies" "$(echo "$OUT" | tr '\n' ' ')"
  fi
  check_exposure "systemd-analyze security with the fleet drop-in" 1.5 "$SECURITY"
else
  echo "note: no systemd-analyze here; the units are verified by make e2e"
fi

# The example alerting rules, as installed, load in Prometheus (promtool, from make deps).
if ! command -v promtool > /dev/null; then
  fail "promtool check rules accepts the example alerting rules" "no promtool here (make deps installs prometheus)"
elif OUT=$(promtool check rules "$A/usr/share/doc/trialwatch/examples/trialwatch-alerts.yml" 2>&1); then
  pass "promtool check rules accepts the example alerting rules ($(grep -o '[0-9]* rules found' <<< "$OUT"))"
else
  fail "promtool check rules accepts the example alerting rules" "$(echo "$OUT" | head -n 5 | tr '\n' ' ')"
fi

# --- Man pages and shell completions --------------------------------------------------------

if command -v mandoc > /dev/null; then
  for page in $PAGES; do
    OUT=$(mandoc -T lint "$A/usr/share/man/$page" 2>&1)
    if [ $? -eq 0 ] && [ -z "$OUT" ]; then
      pass "mandoc -T lint finds nothing in $page"
    else
      fail "mandoc -T lint finds nothing in $page" "$(echo "$OUT" | head -n 5 | tr '\n' ' ')"
    fi
  done
else
  fail "mandoc -T lint finds nothing in the man pages" "no mandoc here (make deps installs it)"
fi
VERSION=$("$A/usr/bin/trialwatchd" --version)
for page in $PAGES; do
  MISSING=""
  for section in NAME SYNOPSIS DESCRIPTION FILES "SEE ALSO"; do
    grep -Eq "^\.SH \"?$section\"?\$" "$A/usr/share/man/$page" || MISSING="$MISSING $section"
  done
  case $page in *.1 | *.8) grep -q '^\.SH "EXIT STATUS"$' "$A/usr/share/man/$page" || MISSING="$MISSING EXIT-STATUS" ;; esac
  grep -q "^\.TH .* \"trialwatch $VERSION\" " "$A/usr/share/man/$page" || MISSING="$MISSING version-$VERSION"
  if [ -z "$MISSING" ]; then
    pass "$page has its sections and names trialwatch $VERSION"
  else
    fail "$page has its sections and names trialwatch $VERSION" "missing:$MISSING"
  fi
done
if ! command -v man > /dev/null; then
  echo "note: no man here; mandoc checked the pages"
elif MANPAGER=cat MANWIDTH=80 LC_ALL=C man -M "$A/usr/share/man" trialwatchd 2>&1 | grep -Eq '^ +trialwatchd +- +keeps trial'; then
  pass "man trialwatchd shows the installed page"
else
  fail "man trialwatchd shows the installed page" "$(MANPAGER=cat man -M "$A/usr/share/man" trialwatchd 2>&1 | head -n 5 | tr '\n' ' ')"
fi

# Each completion script parses in its shell (zsh and fish where they are installed), and
# bash's completes subcommands with the installed binary.
for command in trialwatchctl trialwatchd; do
  if OUT=$(bash -n "$A/usr/share/bash-completion/completions/$command" 2>&1); then
    pass "bash -n accepts the bash completion of $command"
  else
    fail "bash -n accepts the bash completion of $command" "$(echo "$OUT" | head -n 3 | tr '\n' ' ')"
  fi
  if command -v zsh > /dev/null; then
    if OUT=$(zsh -n "$A/usr/share/zsh/vendor-completions/_$command" 2>&1); then
      pass "zsh -n accepts the zsh completion of $command"
    else
      fail "zsh -n accepts the zsh completion of $command" "$(echo "$OUT" | head -n 3 | tr '\n' ' ')"
    fi
  fi
  if command -v fish > /dev/null; then
    if OUT=$(fish --no-execute "$A/usr/share/fish/vendor_completions.d/$command.fish" 2>&1); then
      pass "fish --no-execute accepts the fish completion of $command"
    else
      fail "fish --no-execute accepts the fish completion of $command" "$(echo "$OUT" | head -n 3 | tr '\n' ' ')"
    fi
  fi
done
# shellcheck disable=SC2016 # expanded by the inner bash
COMPLETE='source "$1"; COMP_WORDS=("$2" st); COMP_CWORD=1; COMP_LINE="${COMP_WORDS[*]}"; COMP_POINT=${#COMP_LINE}
  _trialwatchctl "$2" st "$2"; printf "%s\n" "${COMPREPLY[@]}"'
OUT=$(bash -c "$COMPLETE" bash "$A/usr/share/bash-completion/completions/trialwatchctl" "$A/usr/bin/trialwatchctl" 2>&1)
if [ "$OUT" = "$(printf 'start\nstatus\nstats')" ]; then
  pass "bash completes trialwatchctl st to start, status and stats"
else
  fail "bash completes trialwatchctl st to start, status and stats" "got: $(echo "$OUT" | tr '\n' ' ')"
fi

# --- A second install keeps what the administrator changed ---------------------------------

echo "# changed by the administrator" >> "$A/etc/trialwatch/trialwatch.conf"
printf '[Trials]\nDefaultLength=14d\n' > "$A/etc/trialwatch/trialwatch.conf.d/50-local.conf"
printf '[Plan]\nLength=14d\n' > "$A/etc/trialwatch/plans/local.conf"
cp "$A/etc/trialwatch/trialwatch.conf" "$TMP/changed.conf"
if install_into "$A" && same "$TMP/changed.conf" "$A/etc/trialwatch/trialwatch.conf" \
  && [ -f "$A/etc/trialwatch/trialwatch.conf.d/50-local.conf" ] && [ -f "$A/etc/trialwatch/plans/local.conf" ]; then
  pass "a second install keeps a changed configuration, its drop-ins and plans"
else
  fail "a second install keeps a changed configuration, its drop-ins and plans" "$(tail -n 3 "$A.log" | tr '\n' ' ')"
fi

# --- Another PREFIX -------------------------------------------------------------------------

B=$TMP/local
if install_into "$B" PREFIX=/usr/local \
  && [ -x "$B/usr/local/bin/trialwatchd" ] && [ -x "$B/usr/local/bin/trialwatchctl" ] \
  && grep -qx 'ExecStart=/usr/local/bin/trialwatchd' "$B/usr/local/lib/systemd/system/trialwatch.service" \
  && grep -q '^ExecStart=/usr/local/bin/trialwatchctl consume ' \
    "$B/usr/local/lib/systemd/system/trialwatch-consumer@.service" \
  && grep -q 'file:///usr/local/share/doc/trialwatch/' "$B/usr/local/lib/systemd/system/trialwatch.socket" \
  && grep -qx 'ExecStart=/usr/local/libexec/trialwatch/trialwatch-webhooks' \
    "$B/usr/local/lib/systemd/system/trialwatch-webhooks.service" \
  && [ "$(readlink "$B/usr/local/libexec/trialwatch/trialwatch-webhooks")" = ../../bin/trialwatchd ] \
  && [ -x "$B/usr/local/libexec/trialwatch/trialwatch-webhooks" ] \
  && grep -qx 'ExecStart=/usr/local/libexec/trialwatch/trialwatch-http' \
    "$B/usr/local/lib/systemd/system/trialwatch-http.service" \
  && [ "$(readlink "$B/usr/local/libexec/trialwatch/trialwatch-http")" = ../../bin/trialwatchd ] \
  && grep -q 'file:///usr/local/share/doc/trialwatch/' "$B/usr/local/lib/systemd/system/trialwatch-http.socket" \
  && grep -q '^ExecStart=/usr/local/bin/trialwatchctl metrics ' \
    "$B/usr/local/lib/systemd/system/trialwatch-metrics.service" \
  && grep -q 'file:///usr/local/share/doc/trialwatch/' "$B/usr/local/lib/systemd/system/trialwatch-report.socket" \
  && grep -q 'file:///usr/local/share/doc/trialwatch/' "$B/usr/local/lib/systemd/system/trialwatch-metrics.timer" \
  && [ -f "$B/usr/local/lib/sysusers.d/trialwatch.conf" ] \
  && [ -f "$B/usr/local/lib/systemd/catalog/trialwatch.catalog" ] \
  && [ -f "$B/etc/trialwatch/trialwatch.conf" ] && [ ! -e "$B/usr/bin" ] \
  && grep -q '/usr/local/lib/systemd/system/trialwatch.service' "$B/usr/local/share/man/man8/trialwatchd.8" \
  && grep -q '/usr/local/share/doc/trialwatch/README.md' "$B/usr/local/share/man/man8/trialwatchd.8" \
  && grep -q '/usr/local/share/doc/trialwatch/docs/' "$B/usr/local/share/man/man8/trialwatchd.8" \
  && ! grep -q '/usr/lib/' "$B/usr/local/share/man/man8/trialwatchd.8" \
  && [ -f "$B/usr/local/share/man/man1/trialwatchctl.1" ] && [ -f "$B/usr/local/share/man/man5/trialwatch.conf.5" ] \
  && [ -f "$B/usr/local/share/bash-completion/completions/trialwatchctl" ] \
  && [ -f "$B/usr/local/share/zsh/vendor-completions/_trialwatchctl" ] \
  && [ -f "$B/usr/local/share/fish/vendor_completions.d/trialwatchctl.fish" ] \
  && grep -q '/usr/local/share/doc/trialwatch/examples/trialwatch-fleet.conf' \
    "$B/usr/local/share/doc/trialwatch/examples/trialwatch-fleet.conf"; then
  pass "PREFIX=/usr/local: paths substituted in the units and pages, configuration still in /etc"
else
  fail "PREFIX=/usr/local: paths substituted in the units and pages, configuration still in /etc" \
    "$(grep '^ExecStart' "$B/usr/local/lib/systemd/system/trialwatch.service" 2>&1)"
fi

# --- Uninstall ------------------------------------------------------------------------------

if uninstall_from "$A"; then
  LEFT=$(cd "$A" && find . -type f | sort | tr '\n' ' ')
  if [ "$LEFT" = "./etc/trialwatch/plans/local.conf ./etc/trialwatch/trialwatch.conf ./etc/trialwatch/trialwatch.conf.d/50-local.conf " ]; then
    pass "make uninstall removes everything but the changed configuration"
  else
    fail "make uninstall removes everything but the changed configuration" "left: $LEFT"
  fi
else
  fail "make uninstall removes everything but the changed configuration" "$(tail -n 3 "$A.uninstall.log")"
fi
if uninstall_from "$B" PREFIX=/usr/local; then
  LEFT=$(cd "$B" && find . -type f | tr '\n' ' ')
  if [ -z "$LEFT" ] && [ ! -e "$B/etc/trialwatch" ]; then
    pass "make uninstall removes an unchanged configuration and /etc/trialwatch"
  else
    fail "make uninstall removes an unchanged configuration and /etc/trialwatch" "left: $LEFT"
  fi
else
  fail "make uninstall removes an unchanged configuration and /etc/trialwatch" "$(tail -n 3 "$B.uninstall.log")"
fi

summary
[ "$FAILED" -eq 0 ]
