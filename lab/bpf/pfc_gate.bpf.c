// SPDX-License-Identifier: GPL-2.0
/* The PFC gate of a lab switch (docs/lab.md, "PFC"): attached by injectors/sys/pfc_gate.cc as a
 * direct-action cls_bpf filter on every port's clsact egress, ahead of the ECN marker and the
 * port's htb/bfifo queues. While a port's priority is paused (its hold_until_ns is in the future),
 * a frame of that priority does not go out: the program copies it into a ring buffer and steals
 * it, and the switch's PFC agent (app/pfc_switch_cmd.cc) sends it back out of the port, marked,
 * once the pause ends. Everything else continues to the next filter untouched. The host kernel has
 * no plug, prio or mqprio qdisc, and htb keeps a token debt across rate changes: holding in user
 * space is how a paused egress sends nothing and releases at once. One program serves all ports.
 * A second program, on every port's ingress, tags each frame with the port it came in on. */

// libbpf's helper headers need the kernel's types first.
// clang-format off
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>
// clang-format on

#include "injectors/sys/pfc_gate_abi.h"

const volatile struct fc_pfc_params params = {};

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 256);
  __type(key, __u32);
  __type(value, struct fc_pfc_hold);
} fc_pfc_hold SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 256);
  __type(key, __u32);
  __type(value, struct fc_pfc_counts);
} fc_pfc_counts SEC(".maps");

/* 16 MiB: more than every port's buffer of held frames at the lab's rates. */
struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 16 << 20);
} fc_pfc_held SEC(".maps");

SEC("tc")
int fc_pfc_gate(struct __sk_buff* skb) {
  if (skb->mark == params.reinject_mark) return TC_ACT_UNSPEC;
  __u32 ifindex = skb->ifindex;
  struct fc_pfc_hold* hold = bpf_map_lookup_elem(&fc_pfc_hold, &ifindex);
  if (!hold) return TC_ACT_UNSPEC;

  void* data = (void*)(long)skb->data;
  void* data_end = (void*)(long)skb->data_end;
  __u32 priority = 0;
  struct ethhdr* eth = data;
  if ((void*)(eth + 1) <= data_end && eth->h_proto == bpf_htons(ETH_P_IP)) {
    struct iphdr* ip = (void*)(eth + 1);
    /* The port model's class map: IPv4 DSCP in the lossless set, the rest best effort. */
    if ((void*)(ip + 1) <= data_end && ((params.lossless_dscp_mask >> (ip->tos >> 2)) & 1)) {
      priority = params.lossless_priority & (FC_PFC_PRIORITIES - 1);
    }
  }
  if (priority >= FC_PFC_PRIORITIES) return TC_ACT_UNSPEC;
  if (bpf_ktime_get_ns() >= hold->hold_until_ns[priority]) return TC_ACT_UNSPEC;
  struct fc_pfc_counts* counts = bpf_map_lookup_elem(&fc_pfc_counts, &ifindex);
  if (!counts) return TC_ACT_UNSPEC;

  /* Paused: this frame must not leave now. Held when it fits, dropped (and counted) when not. */
  const __u32 length = skb->len;
  if (length > FC_PFC_MAX_FRAME || length < ETH_HLEN) {
    __sync_fetch_and_add(&counts->dropped_oversize[priority], 1);
    return TC_ACT_SHOT;
  }
  struct fc_pfc_held_frame* held = bpf_ringbuf_reserve(&fc_pfc_held, sizeof(*held), 0);
  if (!held) {
    __sync_fetch_and_add(&counts->dropped_no_room[priority], 1);
    return TC_ACT_SHOT;
  }
  held->ifindex = ifindex;
  held->priority = priority;
  held->length = length;
  /* The port that fed the queue: the ingress program's tag; a frame it did not tag (no tag on
   * that port, or a mark of someone else's) by skb_iif, which names a bridge, not its port. */
  held->ingress_ifindex = (skb->mark & FC_PFC_INGRESS_TAG_MASK) == FC_PFC_INGRESS_TAG
                              ? (skb->mark & ~FC_PFC_INGRESS_TAG_MASK)
                              : skb->ingress_ifindex;
  /* Bounded again on the register the helper reads, for the verifier (length < 2048). */
  __u32 copy = length & 2047;
  if (copy > FC_PFC_MAX_FRAME) copy = FC_PFC_MAX_FRAME;
  if (copy == 0 || bpf_skb_load_bytes(skb, 0, held->data, copy) != 0) {
    bpf_ringbuf_discard(held, 0);
    __sync_fetch_and_add(&counts->dropped_oversize[priority], 1);
    return TC_ACT_SHOT;
  }
  bpf_ringbuf_submit(held, 0);
  __sync_fetch_and_add(&counts->held[priority], 1);
  return TC_ACT_STOLEN;
}

/* On every port's clsact ingress, first: tags an unmarked frame with the port it came in on, for
 * the gate above (pause propagation, lab/pfc_propagation.h). Never changes the frame's fate. */
SEC("tc")
int fc_pfc_ingress(struct __sk_buff* skb) {
  if (skb->mark == 0 && skb->ifindex <= 0xffff) skb->mark = FC_PFC_INGRESS_TAG | skb->ifindex;
  return TC_ACT_UNSPEC;
}

char LICENSE[] SEC("license") = "GPL";
