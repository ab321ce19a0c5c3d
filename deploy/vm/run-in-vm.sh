#!/usr/bin/env bash
# run-in-vm.sh: run one command inside a throw-away VM running Debian's 6.12 kernel (sch_netem,
# rdma_rxe, the whole module tree), and exit with the command's exit code.
#
#   deploy/vm/run-in-vm.sh [options] -- COMMAND [ARG...]
#
#   --name NAME       guest hostname (default fc-run)
#   --ip ADDR/PREFIX  address of the guest's NIC eth0 (default 10.0.2.15/24). eth0 is a qemu
#                     user-net NIC with restrict=on: it exists (rxe needs a netdev) but reaches
#                     nothing outside the guest.
#   --no-rxe          do not create the Soft-RoCE device rxe0 on eth0 (created by default)
#   --mem MB          guest memory (default 768)
#   --timeout S       kill the VM after S seconds and exit 124 (default 300; boot takes 8-15 s)
#   --share DIR       also mount host directory DIR read-write at the same path in the guest
#   --console FILE    keep the console log there (default: a temporary file, removed)
#   --cache DIR       kernel cache (default $FC_VM_CACHE or /var/cache/fabric-chaos/vm)
#   --quiet           do not stream the console; print it only when the command fails
#   --interactive     connect this terminal to the guest's serial console and run the command on
#                     it: `run-in-vm.sh --interactive -- bash` is a debugging shell in the guest
#                     (Ctrl-A X kills the VM; exit the shell to power off normally)
#   --check           only check the prerequisites: exit 0, or print what is missing and exit 1
#
# What the guest sees: the host's whole file tree read-only (so build outputs such as
# build/tests/... run as they are), the same working directory, and private tmpfs on /tmp, /run
# and /var/tmp (the host's are hidden: pass --share for a host directory under them). $FC_WORK is
# a scratch directory shared with the host and removed afterwards (write results you want to keep
# to a --share directory); $FC_GUEST=1; $CI is the caller's, when set (under CI=true a test in the
# guest fails rather than skips, as on the host). The command runs as root with bash, stdin
# /dev/null, in the guest's initial network namespace; lo and eth0 are up, rxe0 exists, the
# modules crc32_generic, virtio_net, sch_netem and rdma_rxe are loaded and `modprobe` works.
#
# Exit codes: the command's own; 124 on timeout (qemu killed); 125 when the VM could not run it
# (the console says why; FC_INIT_FAILED lines come from the initramfs); 2 on a usage error;
# 77 when a prerequisite is missing (no kernel, no qemu, not root) and CI is not "true" -- in CI
# that is 125 too. In CMake: set_tests_properties(T PROPERTIES SKIP_RETURN_CODE 77) makes such a
# test skip on a developer's machine and fail in CI, with the reason on stderr.
# Prerequisites: root, qemu-system-x86_64, and deploy/vm/fetch-kernel.sh run once.
# The VM uses TCG (never KVM: it hangs this guest) with 1 vCPU.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
name=fc-run
ip_addr=10.0.2.15/24
rxe=1
mem=768
timeout_s=300
shares=()
console=""
cache=${FC_VM_CACHE:-/var/cache/fabric-chaos/vm}
quiet=0
check_only=0
interactive=0
qemu=${QEMU:-qemu-system-x86_64}

usage() { sed -n '2,38p' "$0" | sed 's/^# \{0,1\}//'; }
die() { echo "run-in-vm: $*" >&2; exit 125; }
while [ $# -gt 0 ]; do
  case "$1" in
    --name) name=$2; shift 2 ;;
    --ip) ip_addr=$2; shift 2 ;;
    --no-rxe) rxe=0; shift ;;
    --mem) mem=$2; shift 2 ;;
    --timeout) timeout_s=$2; shift 2 ;;
    --share) shares+=("$(realpath "$2")"); shift 2 ;;
    --console) console=$2; shift 2 ;;
    --cache) cache=$2; shift 2 ;;
    --quiet) quiet=1; shift ;;
    --check) check_only=1; shift ;;
    --interactive) interactive=1; shift ;;
    -h|--help) usage; exit 0 ;;
    --) shift; break ;;
    *) echo "run-in-vm: unknown option $1 (the command goes after --)" >&2; usage >&2; exit 2 ;;
  esac
done
[[ $name =~ ^[A-Za-z0-9-]+$ ]] || { echo "run-in-vm: --name must be letters, digits and -" >&2; exit 2; }
[[ $ip_addr =~ ^[0-9.]+/[0-9]+$ ]] || { echo "run-in-vm: --ip must look like 10.0.2.15/24" >&2; exit 2; }
[[ $mem =~ ^[0-9]+$ ]] || { echo "run-in-vm: --mem must be a number of MB" >&2; exit 2; }
[[ $timeout_s =~ ^[0-9]+$ ]] || { echo "run-in-vm: --timeout must be a number of seconds" >&2; exit 2; }

# Prerequisites, each missing one named with what to do about it.
missing=""
if [ "$(id -u)" -ne 0 ]; then
  missing="run-in-vm needs root (qemu's 9p passthrough reads the host's files as root)"
elif ! command -v "$qemu" >/dev/null; then
  missing="$qemu is not installed (deploy/install-deps.sh installs qemu-system-x86)"
elif [ ! -f "$cache/vmlinuz" ] || [ ! -f "$cache/kernel.version" ] || [ ! -d "$cache/kernel/lib" ]; then
  missing="no guest kernel in $cache: run deploy/vm/fetch-kernel.sh $cache"
elif [ ! -f "$cache/initramfs.cpio.gz" ]; then
  missing="no initramfs in $cache: run deploy/vm/make-initramfs.sh $cache"
fi
if [ $check_only = 1 ]; then
  [ -z "$missing" ] && { echo "run-in-vm: ready (kernel $(cat "$cache/kernel.version"), cache $cache)"; exit 0; }
  echo "run-in-vm: $missing" >&2
  exit 1
fi
[ $# -gt 0 ] || { echo "run-in-vm: no command given (put it after --)" >&2; exit 2; }
if [ -n "$missing" ]; then
  if [ "${CI:-}" = true ]; then die "$missing"; fi
  echo "run-in-vm: skipped: $missing" >&2
  exit 77
fi
cache=$(cd "$cache" && pwd)

work=$(mktemp -d /tmp/fc-vm-run.XXXXXX) || die "cannot create a work directory"
chmod 755 "$work"
[ -n "$console" ] || console="$work/console.log"
: >"$console" || die "cannot write $console"
qemu_pid=""
tail_pid=""
cleanup() {
  [ -n "$qemu_pid" ] && kill -KILL "$qemu_pid" 2>/dev/null
  [ -n "$tail_pid" ] && kill "$tail_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
trap 'echo "run-in-vm: interrupted" >&2; exit 130' INT TERM

# The command goes in a file on the shared work directory: no length limit, exact quoting.
{
  echo "cd $(printf '%q' "$PWD") 2>/dev/null ||"
  echo "  { echo \"run-in-vm: $(printf '%q' "$PWD") is not visible in the guest; running in /\" >&2; cd /; }"
  echo "export FC_WORK=$(printf '%q' "$work")"
  [ -n "${CI+set}" ] && echo "export CI=$(printf '%q' "$CI")"
  printf 'exec'
  printf ' %q' "$@"
  echo
} >"$work/cmd.sh"
cmd_b64=$(printf '%s' "exec /bin/bash $work/cmd.sh" | base64 -w0)
# The guest hides the host's /tmp, /run and /var/tmp behind its own tmpfs. A command or working
# directory below them (a CI clone in /tmp) gets its top directory there shared at the same path.
share_root() {
  case "$1" in
    /tmp/?* | /run/?* | /var/tmp/?*)
      echo "$1" | awk -F/ '{ if ($2 == "var") print "/" $2 "/" $3 "/" $4; else print "/" $2 "/" $3 }' ;;
  esac
}
for p in "$1" "$PWD"; do
  root=$(share_root "$p")
  [ -n "$root" ] || continue
  known=0
  for s in "${shares[@]}"; do [ "$s" = "$root" ] && known=1; done
  [ $known = 1 ] || shares+=("$root")
done

share_spec="fcwork:$work:rw"
virtfs=(-virtfs "local,path=$work,mount_tag=fcwork,security_model=passthrough")
i=0
for s in "${shares[@]}"; do
  [[ $s =~ ^[A-Za-z0-9_./+-]+$ ]] || die "--share path $s has characters the kernel command line cannot carry"
  share_spec+=",fcshare$i:$s:rw"
  virtfs+=(-virtfs "local,path=$s,mount_tag=fcshare$i,security_model=passthrough")
  i=$((i + 1))
done

append="console=ttyS0 panic=-1 quiet mitigations=off tsc=reliable no_timer_check 8250.nr_uarts=1"
# The init script runs before any share is mounted: from a hidden tree, use a copy by the kernel.
guest_init=$here/guest-init.sh
if [ -n "$(share_root "$guest_init")" ]; then
  copy=$cache/guest-init-$(sha1sum "$guest_init" | cut -c1-16).sh
  if [ ! -f "$copy" ]; then
    cp "$guest_init" "$copy.$$" && chmod 755 "$copy.$$" && mv "$copy.$$" "$copy"
  fi
  guest_init=$copy
fi
append+=" fc.init=$guest_init fc.name=$name fc.ip=$ip_addr fc.rxe=$rxe"
append+=" fc.shares=$share_spec fc.exitfile=$work/exit fc.cmd=$cmd_b64"

if [ $interactive = 1 ]; then
  append+=" fc.interactive=1"
  # The console is this terminal (and still logged, for FC_EXIT); Ctrl-C goes to the guest.
  # shellcheck disable=SC2054 # commas belong to qemu's option syntax
  console_args=(-chardev "stdio,id=con,mux=on,signal=off,logfile=$console"
    -serial chardev:con -mon chardev=con,mode=readline)
  quiet=1
  stdin=/dev/stdin
  out="/dev/stdout"
else
  console_args=(-monitor none -serial "file:$console")
  stdin=/dev/null
  out="$work/qemu.out"
fi

start=$(date +%s)
# la57=off: see lab/vm_lab.cc (5-level paging under qemu 7.2's TCG killed guests under load).
"$qemu" -name "$name" -accel tcg -cpu max,la57=off -m "$mem" -smp 1 -nodefaults -no-reboot \
  -display none "${console_args[@]}" \
  -kernel "$cache/vmlinuz" -initrd "$cache/initramfs.cpio.gz" -append "$append" \
  -virtfs "local,path=/,mount_tag=hostroot,security_model=passthrough,multidevs=remap,readonly=on" \
  -virtfs "local,path=$cache/kernel/lib,mount_tag=fckernel,security_model=passthrough,readonly=on" \
  "${virtfs[@]}" \
  -netdev user,id=data,restrict=on -device virtio-net-pci,netdev=data,mac=52:54:00:fc:ff:01 \
  <"$stdin" >"$out" 2>&1 &
qemu_pid=$!
if [ $quiet = 0 ]; then
  tail -n +1 -F --pid="$qemu_pid" "$console" 2>/dev/null &
  tail_pid=$!
fi

timed_out=0
while kill -0 "$qemu_pid" 2>/dev/null; do
  if [ $(($(date +%s) - start)) -ge "$timeout_s" ]; then
    timed_out=1
    kill -KILL "$qemu_pid" 2>/dev/null
    break
  fi
  sleep 0.2
done
wait "$qemu_pid" 2>/dev/null
qemu_rc=$?
qemu_pid=""
if [ -n "$tail_pid" ]; then
  wait "$tail_pid" 2>/dev/null
  tail_pid=""
fi
elapsed=$(($(date +%s) - start))

rc=""
if [ -s "$work/exit" ]; then
  rc=$(tr -dc '0-9' <"$work/exit")
else
  rc=$(grep -a -o 'FC_EXIT=[0-9]*' "$console" | tail -n 1 | cut -d= -f2)
fi
if [ $timed_out = 1 ]; then
  echo "run-in-vm: timed out after ${timeout_s} s; qemu killed (console: $console)" >&2
  [ $quiet = 1 ] && [ $interactive = 0 ] && cat "$console" >&2
  exit 124
fi
if [ -z "$rc" ]; then
  [ $quiet = 1 ] && [ $interactive = 0 ] && cat "$console" >&2
  [ -f "$work/qemu.out" ] && cat "$work/qemu.out" >&2
  reason=$(grep -a -o 'FC_INIT_FAILED: .*' "$console" | head -n 1)
  die "the VM stopped after ${elapsed} s without running the command (qemu exit $qemu_rc${reason:+; $reason})"
fi
[ $quiet = 1 ] && [ $interactive = 0 ] && [ "$rc" != 0 ] && cat "$console" >&2
echo "run-in-vm: command exited with $rc after ${elapsed} s in the VM" >&2
exit "$rc"
