// SPDX-License-Identifier: GPL-2.0
/* The flow-hash reset on a leaf-spine lab leaf's host port (docs/lab.md, "Five-tuple hashing"),
 * attached by injectors/sys/flow_hash_reset.cc as a direct-action cls_bpf filter on the port's
 * clsact ingress.
 *
 * A Linux TCP sender's packets carry their socket's random hash (txhash, marked as an L4 hash)
 * across the veth into the leaf, and the kernel's multipath routing takes a packet's L4 hash when
 * it has one (fib_multipath_hash: `if (skb->l4_hash) return skb_get_hash_raw(skb) >> 1;`) before
 * fib_multipath_hash_policy=1 is ever asked. A random per-socket value would pick the spine, and
 * TCP re-rolls it on a retransmission timeout, moving a flow to another spine, which no switch
 * does. Clearing the hash here, where the packet enters the switch, leaves the leaf's routing
 * nothing but the five-tuple to hash, as a switch's ASIC hashes it. The packet itself is never
 * changed. */

// libbpf's helper headers need the kernel's types first.
// clang-format off
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
// clang-format on

/* The kernel names the program after this function (injectors/sys/flow_hash_reset.cc finds it by
 * that name, 15 characters at most). */
SEC("tc")
int fc_hash_reset(struct __sk_buff* skb) {
  bpf_set_hash_invalid(skb);
  return TC_ACT_OK;
}

char LICENSE[] SEC("license") = "GPL";
