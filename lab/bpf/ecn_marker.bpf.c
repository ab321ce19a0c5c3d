// SPDX-License-Identifier: GPL-2.0
/* ECN marking on one modelled lab switch port (docs/lab.md, "ECN marking"), attached by
 * injectors/sys/ecn_marker.cc as a direct-action cls_bpf filter on the port's clsact egress, so it
 * sees every packet before the port's htb/bfifo queues (lab/port_model.h) take it.
 *
 * The host kernel has no RED or fq_codel, so the queue the packet joins is estimated: a virtual
 * queue per traffic class, fed by the packets this program sees and drained at the modelled rate.
 * The two classes share the line rate R as the htb classes do: each drains at R/2 while both are
 * backlogged, and what one does not use (it is empty) goes to the other, lossless first (htb prio
 * 0). Their sum is the port's aggregate queue, draining at R. A packet that would not fit its
 * class's buffer is not counted (the bfifo drops it). An ECT packet is marked CE with the
 * probability of fc_ecn_mark_probability() for the backlog of the class it joins; non-ECT packets
 * are never touched. Each loaded instance serves one port: the loader sets `params` before load. */

// libbpf's helper headers need the kernel's types first.
// clang-format off
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>
// clang-format on

#include "injectors/sys/ecn_marker_abi.h"

#define NSEC_PER_SEC 1000000000ULL
/* An idle port longer than this is as empty as it gets (64 MiB at 1 Mbit/s drains in 537 s). */
#define MAX_IDLE_SEC 1024ULL

const volatile struct fc_ecn_params params = {};

struct fc_vq {
  struct bpf_spin_lock lock;
  fc_u64 last_ns;                 /* when the queues were last drained */
  fc_u64 backlog[FC_ECN_CLASSES]; /* bytes */
};

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct fc_vq);
} fc_ecn_vq SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, FC_ECN_CLASSES);
  __type(key, __u32);
  __type(value, struct fc_ecn_counts);
} fc_ecn_counts SEC(".maps");

static __always_inline fc_u64 min_u64(fc_u64 a, fc_u64 b) { return a < b ? a : b; }

/* Bytes the port sends in dt nanoseconds (dt at most MAX_IDLE_SEC seconds): whole seconds and the
 * rest apart, so that no product overflows 64 bits up to 100 Gbit/s (12.5e9 bytes/s * 1e9 ns). */
static __always_inline fc_u64 drain_budget(fc_u64 dt) {
  const fc_u64 rate = params.rate_bytes_per_sec;
  return dt / NSEC_PER_SEC * rate + dt % NSEC_PER_SEC * rate / NSEC_PER_SEC;
}

/* Drains both classes' virtual queues up to `now`; the caller holds vq->lock. */
static __always_inline void drain(struct fc_vq* vq, fc_u64 now) {
  if (now <= vq->last_ns) return;
  fc_u64 dt = now - vq->last_ns;
  if (dt > MAX_IDLE_SEC * NSEC_PER_SEC) dt = MAX_IDLE_SEC * NSEC_PER_SEC;
  vq->last_ns = now;
  const fc_u64 budget = drain_budget(dt);
  const fc_u64 q0 = vq->backlog[FC_ECN_CLASS_LOSSLESS];
  const fc_u64 q1 = vq->backlog[FC_ECN_CLASS_BEST_EFFORT];
  /* Each class's guaranteed half, then the rest to whichever still has bytes, lossless first. */
  fc_u64 d0 = min_u64(q0, budget / 2);
  fc_u64 d1 = min_u64(q1, budget / 2);
  fc_u64 left = budget - d0 - d1;
  const fc_u64 e0 = min_u64(q0 - d0, left);
  d0 += e0;
  left -= e0;
  d1 += min_u64(q1 - d1, left);
  vq->backlog[FC_ECN_CLASS_LOSSLESS] = q0 - d0;
  vq->backlog[FC_ECN_CLASS_BEST_EFFORT] = q1 - d1;
}

SEC("tc")
int fc_ecn_marker(struct __sk_buff* skb) {
  void* data = (void*)(long)skb->data;
  void* data_end = (void*)(long)skb->data_end;
  __u32 cls = FC_ECN_CLASS_BEST_EFFORT;
  __u8 ecn = 0; /* INET_ECN_NOT_ECT */

  struct ethhdr* eth = data;
  if ((void*)(eth + 1) <= data_end) {
    if (eth->h_proto == bpf_htons(ETH_P_IP)) {
      struct iphdr* ip = (void*)(eth + 1);
      if ((void*)(ip + 1) <= data_end) {
        ecn = ip->tos & 3;
        /* The port model's u32 filters match IPv4 DSCP only; IPv6 is best effort there too. */
        if ((params.lossless_dscp_mask >> (ip->tos >> 2)) & 1) cls = FC_ECN_CLASS_LOSSLESS;
      }
    } else if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
      struct ipv6hdr* ip6 = (void*)(eth + 1);
      if ((void*)(ip6 + 1) <= data_end) ecn = (ip6->flow_lbl[0] >> 4) & 3;
    }
  }

  const fc_u64 now = bpf_ktime_get_ns();
  const __u32 zero = 0;
  struct fc_vq* vq = bpf_map_lookup_elem(&fc_ecn_vq, &zero);
  if (!vq) return TC_ACT_OK;
  fc_u64 backlog;
  bpf_spin_lock(&vq->lock);
  drain(vq, now);
  backlog = vq->backlog[cls];
  if (backlog + skb->len <= params.buffer_bytes) vq->backlog[cls] = backlog + skb->len;
  bpf_spin_unlock(&vq->lock);

  struct fc_ecn_counts* counts = bpf_map_lookup_elem(&fc_ecn_counts, &cls);
  if (!counts) return TC_ACT_OK;
  __sync_fetch_and_add(&counts->packets, 1);
  if (ecn == 0) return TC_ACT_OK; /* not ECN-capable: never touched, drop-tail decides */
  __sync_fetch_and_add(&counts->ect, 1);
  if (ecn == 3) return TC_ACT_OK; /* already CE */
  const fc_u64 p =
      fc_ecn_mark_probability(backlog, params.kmin_bytes, params.kmax_bytes, params.pmax);
  if (p == 0 || (bpf_get_prandom_u32() & (FC_ECN_PROB_ONE - 1)) >= p) return TC_ACT_OK;
  if (bpf_skb_ecn_set_ce(skb)) __sync_fetch_and_add(&counts->marked, 1);
  return TC_ACT_OK;
}

char LICENSE[] SEC("license") = "GPL";
