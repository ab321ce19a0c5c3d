#!/usr/bin/env bash
# Installs every Debian 12 package fabric-chaos needs to build, test and run. Idempotent; run as
# root. Nothing is downloaded except Debian packages.
set -euo pipefail

packages=(
  # build
  cmake g++ make ninja-build lld pkg-config clang-format
  # libraries (headers)
  libboost-dev nlohmann-json3-dev libsqlite3-dev
  libnl-3-dev libnl-route-3-dev libnftables-dev
  # libbpf opens, relocates, loads and tc-attaches the lab's ECN marker (lab/bpf/); hand-written
  # bpf() syscalls and netlink would duplicate it. The marker is built with clang-14 (below).
  libbpf-dev
  libibverbs-dev librdmacm-dev
  # the IB probe's SMInfo and SA PathRecord MADs (workload/sys/ib_management.cc)
  libibmad-dev libibumad-dev
  # an external workload's step pattern: named groups, bounded matching (workload/step_parser.cc)
  libpcre2-dev
  # GET /metrics: the Prometheus exposition format and thread-safe histograms (server/metrics);
  # a hand-written writer would have to get the format's escaping and bucket rules right again
  prometheus-cpp-dev
  # the pytorch-ddp workload: DDP over gloo on CPU (workload/scripts/pytorch_ddp.py)
  python3-torch
  libgtest-dev libgmock-dev
  libssl-dev openssl
  # third-party observers of the agent's TLS (tests/agent/agent_tls_process_test.cc) and of the
  # systemd units (tests/deploy): curl, systemd-analyze; PyYAML reads the Kubernetes manifests
  curl systemd python3-yaml
  # the official Prometheus client's text parser reads GET /metrics (tests/privileged)
  python3-prometheus-client
  # libFuzzer targets (clang's runtime) and the JUnit schema check of the CI client's output
  clang-14 libclang-rt-14-dev libxml2-utils
  # runtime tools used by the namespace lab and the privileged tests
  iproute2 nftables iputils-ping util-linux procps kmod ethtool tshark
  # BGP on the leaf-spine lab's switches: one BIRD per switch namespace (lab/leaf_spine_routing.h)
  bird2
  # a third-party measurement of the lab's modelled ports (tests/privileged/port_model_e2e_test)
  iperf3
  # the VM lab: qemu (TCG), a static busybox for the initramfs, rdma-core tools for rxe
  qemu-system-x86 busybox-static rdma-core ibverbs-utils
  # perftest's ib_write_bw: the third-party measurement the verbs ring is compared with
  # (bench/verbs_ring_bench; the guests see the host's /usr)
  perftest
  # the dashboard's browser tests drive Debian's chromium (playwright-core never downloads one)
  chromium sqlite3
  # the simulated InfiniBand subnet (docs/ib.md): ibsim and its umad2sim preload, OpenSM as the
  # subnet manager, and infiniband-diags (sminfo, ibnetdiscover, saquery) as its observers
  ibsim-utils opensm infiniband-diags
  # a Slurm cluster made of the namespace lab (`lab up --with-slurm`, docs/lab.md): slurmctld and
  # slurmd as its daemons, sinfo/srun/scontrol as its clients, munge as its authentication
  slurmctld slurmd slurm-client munge
)
# Node.js builds the dashboard (uPlot from npm). Debian's nodejs/npm unless a newer one is there.
command -v node >/dev/null 2>&1 || packages+=(nodejs npm)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages already installed"
else
  if [ "$(id -u)" -ne 0 ]; then
    echo "install-deps: installing ${missing[*]} needs root; run it with sudo" >&2
    exit 1
  fi
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${packages[@]}"
  # Debian starts a system-wide BIRD (bird.service) with the package. The lab runs its own, one
  # per switch namespace, and a daemon in the machine's own namespace is not ours to run: stop it,
  # but only when this script installed bird2 (an operator's own BIRD is left alone).
  if printf '%s\n' "${missing[@]}" | grep -qx bird2 && [ -d /run/systemd/system ]; then
    systemctl disable --now bird.service >/dev/null 2>&1 || true
  fi
  # Likewise OpenSM (opensm.service): the IB lab runs its own, attached to the simulator; one on
  # the machine's own HCAs is the operator's to start. Only when this script installed it.
  if printf '%s\n' "${missing[@]}" | grep -qx opensm && [ -d /run/systemd/system ]; then
    systemctl disable --now opensm.service >/dev/null 2>&1 || true
  fi
  # Likewise Slurm's own services: the lab runs its slurmctld and slurmd with its own slurm.conf
  # and munged; the machine's /etc/slurm is the operator's. Only when this script installed them.
  for unit in slurmctld slurmd; do
    if printf '%s\n' "${missing[@]}" | grep -qx "$unit" && [ -d /run/systemd/system ]; then
      systemctl disable --now "$unit.service" >/dev/null 2>&1 || true
    fi
  done
fi

# The VM lab's guest kernel (Debian's linux-image-6.12.*+deb12-amd64-unsigned) and its initramfs,
# unpacked under /var/cache/fabric-chaos/vm. Idempotent; only the first run downloads.
if [ "$(id -u)" -eq 0 ]; then
  bash "$(dirname "$0")/vm/fetch-kernel.sh"
else
  echo "install-deps: skipping the VM lab kernel (needs root: sudo bash deploy/vm/fetch-kernel.sh)"
fi
