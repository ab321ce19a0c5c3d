#!/usr/bin/env bash
# ci_no_skip.sh COMMAND [ARG...]: runs a ctest test that is not a gtest executable of ours (node
# test files, shell scripts, deploy/vm/run-in-vm.sh around a binary in a guest) so that under
# CI=true a skip is a failure, like tests/support/ci_skip_policy.h does for gtest executables.
# Outside CI it just execs the command (exit 77 = skipped, with SKIP_RETURN_CODE 77). Under CI the
# command's output is scanned and the test fails, saying why, when the command
#   - exits 77 (its "skipped" code),
#   - reports skipped node:test subtests ("# skipped N", N > 0, in the TAP summary), or
#   - reports a skipped gtest test ("[  SKIPPED ]" lines, e.g. from a binary run in a guest).
set -uo pipefail
[ $# -gt 0 ] || { echo "ci_no_skip: no command given" >&2; exit 2; }
[ "${CI:-}" = true ] || exec "$@"

log=$(mktemp /tmp/fc-ci-no-skip.XXXXXX) || { echo "ci_no_skip: mktemp failed" >&2; exit 1; }
trap 'rm -f "$log"' EXIT
"$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}

why=()
[ "$rc" = 77 ] && why+=("it exited 77 (skipped)")
node_skips=$(grep -aoE '^# skipped [0-9]+' "$log" | awk '{s += $3} END {print s + 0}')
[ "$node_skips" -gt 0 ] && why+=("$node_skips node:test subtest(s) skipped")
gtest_skips=$(tr -d '\r' <"$log" | grep -acE '^\[  SKIPPED \] [^ ]+\.[^ ]+')
[ "$gtest_skips" -gt 0 ] && why+=("gtest reported $gtest_skips skipped test line(s)")

if [ ${#why[@]} -gt 0 ]; then
  printf 'FAIL (CI=true, so nothing may be skipped): %s\n' "$(IFS=';'; echo "${why[*]}")"
  { [ "$rc" = 0 ] || [ "$rc" = 77 ]; } && exit 1
fi
exit "$rc"
