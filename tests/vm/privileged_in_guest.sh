#!/usr/bin/env bash
# privileged_in_guest.sh: the privileged tier on a standard kernel. Boots throw-away VMs on
# Debian's 6.12 distribution kernel (sch_netem is a module there, as on any Debian host; the build
# host's kernel may lack it) with deploy/vm/run-in-vm.sh, and runs the already-built privileged
# test executables inside them, as root. The guest sees the host's tree, so the binaries run as
# they are. Every test executable must pass; under CI=true (forwarded into the guest) a skip is a
# failure too (tests/support/ci_skip_policy.h).
#
#   privileged_in_guest.sh --binary FABRIC_CHAOS [--timeout S] [--mem MB] [--guests N]
#                          -- TEST[:FILTER] ...
#
# TEST is a test executable's path; :FILTER (optional) a --gtest_filter for it. The executables
# are shared out between N guests (default 2) that run side by side, each its share one after
# the other: a TCG guest has one vCPU, so one guest leaves one of this machine's two cores idle
# for the ten minutes the tier takes. The guests share nothing (each its own kernel, namespaces
# and /tmp). Shares are balanced by the executables' durations measured in a guest (kGuestSeconds
# below; an unlisted one counts as 30 s). Prints each stage's wall time (boot, each executable,
# total), per guest. Exit: 0 when all passed; 1 when one failed; 77 when the VM prerequisites are
# missing outside CI (a failure in CI); run-in-vm.sh's 124/125 when a VM timed out or could not
# run.
# Inside the guest the script runs itself with --in-guest.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
source_dir=${FC_SOURCE_DIR:-$(cd "$here/../.." && pwd)}
binary=${FC_BINARY:-}
timeout_s=900
mem=2048
guests=2
in_guest=0
while [ $# -gt 0 ]; do
  case "$1" in
    --binary) binary=$2; shift 2 ;;
    --timeout) timeout_s=$2; shift 2 ;;
    --mem) mem=$2; shift 2 ;;
    --guests) guests=$2; shift 2 ;;
    --in-guest) in_guest=1; shift ;;
    --) shift; break ;;
    *) echo "privileged_in_guest: unknown option $1" >&2; exit 2 ;;
  esac
done
[ $# -gt 0 ] || { echo "privileged_in_guest: no test executables given (after --)" >&2; exit 2; }

if [ $in_guest = 1 ]; then
  # --- inside the guest -----------------------------------------------------------------------
  export FC_BINARY=$binary FC_SOURCE_DIR=$source_dir
  # A TCG guest's one vCPU, shared with the workload ranks, is 10-25x slower than the host:
  # timing bounds are widened by this much, order and outcome checks stay as they are.
  export FC_TIMING_SCALE=${FC_TIMING_SCALE:-25}
  t0=$SECONDS
  echo "== guest: kernel $(uname -r), sch_netem $(grep -q '^sch_netem ' /proc/modules && echo loaded || echo MISSING), CI=${CI:-unset}"
  # The point of this tier: the kernel has netem. Say so loudly if it does not.
  if ! grep -q '^sch_netem ' /proc/modules; then
    echo "FAIL: sch_netem is not loaded in the guest: this is not the standard-kernel path"
    exit 1
  fi
  failed=()
  for spec in "$@"; do
    test_bin=${spec%%:*}
    filter=""
    [ "$spec" != "$test_bin" ] && filter=${spec#*:}
    name=$(basename "$test_bin")
    echo "== guest [+$((SECONDS - t0)) s]: $name${filter:+ (--gtest_filter=$filter)}"
    start=$SECONDS
    if [ ! -x "$test_bin" ]; then
      echo "FAIL: $test_bin is not built"
      failed+=("$name (not built)")
      continue
    fi
    (cd /tmp && "$test_bin" ${filter:+"--gtest_filter=$filter"})
    rc=$?
    echo "== guest stage: $name exit $rc, $((SECONDS - start)) s"
    [ $rc = 0 ] || failed+=("$name (exit $rc)")
  done
  echo "== guest: all $# executables in $((SECONDS - t0)) s"
  if [ ${#failed[@]} -gt 0 ]; then
    echo "FAIL: in the 6.12 guest: ${failed[*]}"
    exit 1
  fi
  echo "PASS: the privileged tests passed on Debian's $(uname -r) kernel"
  exit 0
fi

# --- on the host ------------------------------------------------------------------------------
run="$source_dir/deploy/vm/run-in-vm.sh"
if ! reason=$("$run" --check 2>&1); then
  if [ "${CI:-}" = true ]; then
    echo "FAIL: vm tier prerequisite missing (CI=true): $reason"
    exit 1
  fi
  echo "SKIP: $reason"
  exit 77
fi
[ -x "$binary" ] || { echo "FAIL: FC_BINARY/--binary ($binary) is not an executable"; exit 1; }

# Seconds each executable took in one guest running alone (measured 2026-12-03); what shares
# the executables out, longest first, each to the guest with the least so far.
declare -A kGuestSeconds=(
  [run_cli_test]=125 [fault_stack_e2e_test]=94 [guardian_test]=85 [sys_adapters_test]=64
  [raw_packets_test]=47 [crash_recovery_test]=25 [stop_condition_test]=23 [loss_rate_test]=23
  [allowlist_test]=19 [e2e_run_test]=19 [lab_test]=12 [fabric_agents_e2e_test]=4 [dcb_test]=1)
[ "$guests" -ge 1 ] 2>/dev/null || { echo "privileged_in_guest: --guests must be >= 1" >&2; exit 2; }
[ "$guests" -gt $# ] && guests=$#
weighted=()
for spec in "$@"; do
  name=$(basename "${spec%%:*}")
  weighted+=("${kGuestSeconds[$name]:-30} $spec")
done
declare -a share load
for ((g = 0; g < guests; g++)); do share[g]=""; load[g]=0; done
while read -r seconds spec; do
  least=0
  for ((g = 1; g < guests; g++)); do [ "${load[g]}" -lt "${load[least]}" ] && least=$g; done
  share[least]+="$spec"$'\n'
  load[least]=$((load[least] + seconds))
done < <(printf '%s\n' "${weighted[@]}" | sort -rn -k1,1)

start=$(date +%s)
echo "== host: $# privileged test executable(s) in $guests guest(s) side by side, timeout ${timeout_s} s"
logs=$(mktemp -d /tmp/fc-guest-tier.XXXXXX)
declare -a pids
for ((g = 0; g < guests; g++)); do
  mapfile -t specs < <(printf '%s' "${share[g]}")
  echo "== host: guest $g (about ${load[g]} s alone): $(for s in "${specs[@]}"; do basename "${s%%:*}"; done | tr '\n' ' ')"
  # No rxe: none of these tests uses RDMA (and the guest boots faster without it).
  "$run" --name "fc-privileged-$g" --mem "$mem" --timeout "$timeout_s" --no-rxe -- \
    bash "$here/privileged_in_guest.sh" --in-guest --binary "$binary" -- "${specs[@]}" \
    >"$logs/guest-$g.log" 2>&1 &
  pids[g]=$!
done
rc=0
for ((g = 0; g < guests; g++)); do
  guest_rc=0
  wait "${pids[g]}" || guest_rc=$?
  echo "== host: guest $g exit $guest_rc after $(($(date +%s) - start)) s wall clock (boot included)"
  # One guest's console at a time, whole, so that its stages read in order.
  sed "s/^/[guest $g] /" "$logs/guest-$g.log"
  # The first failure's code is the tier's (124/125: a VM timed out or could not run).
  [ $guest_rc = 0 ] || [ $rc != 0 ] || rc=$guest_rc
done
if [ $rc != 0 ]; then
  # Again at the end, where a log cut in the middle still shows them: which executable failed,
  # which gtest cases, and the assertion lines.
  echo "== host: what failed"
  for ((g = 0; g < guests; g++)); do
    awk -v tag="[guest $g] " '
      /: Failure$/ { after = 4 }
      after > 0 || /^FAIL: / || /^== guest stage: .* exit [1-9]/ || /^\[  FAILED  \] / {
        print tag $0; if (after > 0) after--
      }' "$logs/guest-$g.log"
  done
fi
rm -rf "$logs"
echo "== host: guest tier exit $rc after $(($(date +%s) - start)) s wall clock"
exit $rc
