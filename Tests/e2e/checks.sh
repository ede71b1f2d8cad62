# shellcheck shell=bash
# Shared by the installation and end-to-end tests (sourced): named checks and their count.
# `pass NAME` and `fail NAME WHY` print one line each; `summary` prints `N passed, N failed`;
# `check_exposure` checks what `systemd-analyze security` says.
PASSED=0
FAILED=0

pass() {
  echo "PASS: $1"
  PASSED=$((PASSED + 1))
}

fail() {
  echo "FAIL: $1: $2"
  FAILED=$((FAILED + 1))
}

summary() {
  echo "$PASSED passed, $FAILED failed"
}

# check_exposure WHAT LIMIT OUTPUT: passes when OUTPUT, of `systemd-analyze security`, gives an
# overall exposure level of at most LIMIT.
check_exposure() {
  local what=$1 limit=$2 line score
  line=$(grep -o 'Overall exposure level.*' <<< "$3")
  score=$(echo "$line" | sed -n 's/.*: \([0-9.]*\) .*/\1/p')
  if [ -n "$score" ] && awk -v s="$score" -v limit="$limit" 'BEGIN { exit !(s <= limit) }'; then
    pass "$what: exposure $score (at most $limit)"
  else
    fail "$what: exposure at most $limit" "${line:-no score}"
  fi
}
