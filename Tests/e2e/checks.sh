# Shared by the installation and end-to-end tests (sourced): named checks and their count.
# `pass NAME` and `fail NAME WHY` print one line each; `summary` prints `N passed, N failed`.
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
