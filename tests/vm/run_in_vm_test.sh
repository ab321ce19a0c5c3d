#!/usr/bin/env bash
# vm tier: deploy/vm/run-in-vm.sh boots one VM on Debian's 6.12 kernel and runs a command in it.
#  1. the guest kernel has sch_netem (a netem qdisc can be added) and rdma_rxe (rdma link add on a
#     veth works and ibv_devices lists it), the guest sees the host's tree, and exit 0 comes back;
#  2. the command's own exit code comes back, and files written to a --share directory appear;
#  3. a command that outlives --timeout gets 124 and leaves no qemu behind.
# Prerequisites missing: skip (exit 77) with the reason, or fail when CI=true.
set -uo pipefail

source_dir=${FC_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
run="$source_dir/deploy/vm/run-in-vm.sh"
cache=${FC_VM_CACHE:-/var/cache/fabric-chaos/vm}

if ! reason=$("$run" --check --cache "$cache" 2>&1); then
  if [ "${CI:-}" = true ]; then
    echo "FAIL: vm tier prerequisite missing: $reason"
    exit 1
  fi
  echo "SKIP: $reason"
  exit 77
fi

failures=0
check() {
  local what=$1 want=$2 got=$3
  if [ "$got" = "$want" ]; then
    echo "ok: $what"
  else
    echo "FAIL: $what: exit $got, want $want"
    failures=$((failures + 1))
  fi
}
qemus() { pgrep -f '^qemu-system[^ ]* .*-name fc-run-test' | wc -l; }

# 1. netem and rxe in the guest kernel.
start=$(date +%s)
"$run" --cache "$cache" --name fc-run-test --timeout 240 -- bash -euxc '
  uname -r | grep -q "^6\.12\."
  test -x "'"$run"'"            # the host tree is visible
  tc qdisc add dev lo root netem delay 1ms
  tc qdisc show dev lo | grep -q netem
  ip link add vta type veth peer name vtb
  ip link set vta up
  ip link set vtb up
  rdma link add rxe9 type rxe netdev vta
  ibv_devices | grep -q rxe9
  ibv_devices | grep -q rxe0    # and the one guest-init made on eth0
  echo guest-checks-passed'
check "netem and rxe in the guest" 0 $?
echo "timing: netem+rxe run took $(($(date +%s) - start)) s (boot included)"

# 2. exit codes and a shared directory.
share=$(mktemp -d)
"$run" --cache "$cache" --name fc-run-test --quiet --share "$share" -- \
  sh -c "hostname >$share/hostname; exit 7"
check "the command's exit code comes back" 7 $?
[ "$(cat "$share/hostname" 2>/dev/null)" = fc-run-test ]
check "a --share directory is written through" 0 $?
rm -rf "$share"

# 3. timeout.
start=$(date +%s)
"$run" --cache "$cache" --name fc-run-test --quiet --timeout 5 -- sleep 600 2>/dev/null
check "timeout gives 124" 124 $?
took=$(($(date +%s) - start))
[ "$took" -lt 20 ]
check "timeout is prompt (${took} s)" 0 $?
sleep 1
check "no qemu left behind" 0 "$(qemus)"

# Usage errors are not VM failures.
"$run" --cache "$cache" >/dev/null 2>&1
check "no command is a usage error" 2 $?

[ $failures -eq 0 ] && echo "PASS" && exit 0
echo "$failures check(s) failed"
exit 1
