#!/bin/sh
# guest-init.sh: PID 1 of a fabric-chaos VM, started by the initramfs (make-initramfs.sh) after it
# switch_roots into the host's root (read-only 9p, private tmpfs on /tmp, /run, /var/tmp). It runs
# from the host's tree, so editing it changes every VM booted afterwards with no rebuild.
#
# Kernel command line (all optional):
#   fc.name=NAME            hostname
#   fc.ip=ADDR/PREFIX       address of the data NIC (eth0, the first virtio NIC)
#   fc.mgmt=ADDR/PREFIX     address of the management NIC eth1 when it exists (default 10.0.2.15/24,
#                           qemu user-net; the host reaches the agent through a hostfwd)
#   fc.rxe=1                create Soft-RoCE device rxe0 on eth0
#   fc.shares=TAG:PATH[:rw],...  mount these extra 9p tags at PATH (read-only unless :rw)
#   fc.cmd=BASE64           run `/bin/sh -c CMD`, print FC_EXIT=<code>, power off
#   fc.exitfile=PATH        also write the exit code there (on a :rw share)
#   fc.interactive=1        run fc.cmd on the serial console as its controlling terminal (a
#                           debugging shell: run-in-vm.sh --interactive -- bash)
#   fc.agent=BASE64         otherwise: run `/bin/sh -c AGENT` and restart it whenever it exits
# Everything goes to the serial console. Markers: FC_GUEST_READY once networking is configured,
# FC_EXIT=<code> after fc.cmd, FC_AGENT_START / FC_AGENT_EXIT=<code> around each agent run.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
# The host's /root is read-only here: home is a private directory on the guest's /tmp.
export HOME=/tmp/root TERM=dumb LANG=C.UTF-8 FC_GUEST=1
umask 022
cd /

log() { echo "fc-guest: $*"; }
uptime_s() { cut -d' ' -f1 /proc/uptime; }
power_off() {
  sync
  # The host's poweroff is systemctl; the kernel needs no init system to power off.
  busybox poweroff -f 2>/dev/null
  echo o >/proc/sysrq-trigger
  sleep 10
}

mkdir -p /dev/pts /dev/shm
mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts /dev/pts 2>/dev/null
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /dev/shm 2>/dev/null
[ -e /dev/fd ] || ln -s /proc/self/fd /dev/fd
mkdir -p /run/netns /run/lock "$HOME"
mount -t cgroup2 cgroup2 /sys/fs/cgroup 2>/dev/null
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null

name="" ip_addr="" mgmt="10.0.2.15/24" rxe=0 shares="" cmd_b64="" agent_b64="" exitfile=""
interactive=0
for arg in $(cat /proc/cmdline); do
  case "$arg" in
    fc.name=*) name=${arg#fc.name=} ;;
    fc.ip=*) ip_addr=${arg#fc.ip=} ;;
    fc.mgmt=*) mgmt=${arg#fc.mgmt=} ;;
    fc.rxe=*) rxe=${arg#fc.rxe=} ;;
    fc.shares=*) shares=${arg#fc.shares=} ;;
    fc.cmd=*) cmd_b64=${arg#fc.cmd=} ;;
    fc.agent=*) agent_b64=${arg#fc.agent=} ;;
    fc.exitfile=*) exitfile=${arg#fc.exitfile=} ;;
    fc.interactive=*) interactive=${arg#fc.interactive=} ;;
  esac
done
log "kernel $(uname -r), init started at $(uptime_s) s"
[ -n "$name" ] && hostname "$name"

# crc32_generic first: rdma_rxe asks for the "crc32" shash and fails without it. One modprobe
# for all four (each exec costs ~0.3 s under TCG); -a goes on past a failure and names it.
modprobe -a crc32_generic virtio_net sch_netem rdma_rxe ||
  log "some modules failed to load (continuing)"

ip link set lo up

# virtio_net probes synchronously, but give the NICs a moment to register.
i=0
while [ ! -e /sys/class/net/eth0 ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
if [ -e /sys/class/net/eth0 ]; then
  [ -n "$ip_addr" ] && { ip addr add "$ip_addr" dev eth0 || log "cannot add $ip_addr to eth0"; }
  ip link set eth0 up || log "cannot bring eth0 up"
else
  log "no data NIC eth0"
fi
if [ -e /sys/class/net/eth1 ]; then
  ip addr add "$mgmt" dev eth1 || log "cannot add $mgmt to eth1"
  ip link set eth1 up || log "cannot bring eth1 up"
fi

# Extra shares, e.g. the lab's state directory (the agent's token) or run-in-vm.sh's work
# directory: host paths under /tmp or /run are hidden by the guest's own tmpfs otherwise.
for share in $(echo "$shares" | tr ',' ' '); do
  tag=${share%%:*}
  rest=${share#*:}
  path=${rest%%:*}
  mode=ro
  [ "$rest" != "$path" ] && mode=${rest#*:}
  mkdir -p "$path" 2>/dev/null
  mount -t 9p -o "$mode,trans=virtio,version=9p2000.L,msize=524288" "$tag" "$path" ||
    log "cannot mount 9p tag $tag at $path"
done

if [ "$rxe" = 1 ]; then
  if [ -e /sys/class/net/eth0 ]; then
    rdma link add rxe0 type rxe netdev eth0 || log "cannot create rxe0 on eth0"
  else
    log "fc.rxe=1 but there is no eth0"
  fi
fi

log "network: $(ip -o -4 addr show | awk '{printf "%s %s; ", $2, $4}')"
echo "FC_GUEST_READY $(uptime_s)"

if [ -n "$cmd_b64" ]; then
  cmd=$(printf '%s' "$cmd_b64" | base64 -d) || { log "fc.cmd is not valid base64"; cmd="exit 126"; }
  log "running: $cmd"
  if [ "$interactive" = 1 ]; then
    stty -F /dev/ttyS0 sane 2>/dev/null
    setsid --ctty --wait /bin/sh -c "$cmd" <>/dev/ttyS0 >&0 2>&0
  else
    /bin/sh -c "$cmd" </dev/null
  fi
  rc=$?
  [ -n "$exitfile" ] && echo "$rc" >"$exitfile"
  echo "FC_EXIT=$rc"
  power_off
fi

if [ -n "$agent_b64" ]; then
  agent=$(printf '%s' "$agent_b64" | base64 -d) || { log "fc.agent is not valid base64"; agent=""; }
  while [ -n "$agent" ]; do
    log "starting agent: $agent"
    echo "FC_AGENT_START $(uptime_s)"
    /bin/sh -c "$agent" </dev/null
    echo "FC_AGENT_EXIT=$?"
    sleep 1
  done
fi

# Nothing to run: stay up (PID 1 must not exit) and reap orphans.
while :; do
  sleep 3600 &
  wait
done
