/* What the lab switch's PFC gate (lab/bpf/pfc_gate.bpf.c) and its loader
 * (injectors/sys/pfc_gate.cc) must agree on: the parameters the loader writes into the program's
 * .rodata, the per-port pause state it updates, the record of a held frame the program hands over,
 * and the names of the program and its maps. Plain C, no system headers: it is compiled for the bpf
 * target as well as into C++. */
#pragma once

typedef unsigned long long fc_pfc_u64;
typedef unsigned int fc_pfc_u32;

#define FC_PFC_PRIORITIES 8
/* The largest frame the gate can hold: a full 1500-byte payload with its Ethernet header and a
 * VLAN tag. The lab ports have segmentation offloads off, so nothing larger reaches them. */
#define FC_PFC_MAX_FRAME 1536

#define FC_PFC_PROG_NAME "fc_pfc_gate"
#define FC_PFC_INGRESS_PROG_NAME "fc_pfc_ingress"
/* What the ingress program (on every port's clsact ingress) writes into the mark of a frame that
 * has none: this tag in the high 16 bits, the port's ifindex in the low 16. It lives as long as
 * the frame stays in the switch's namespace (a veth crossing into another clears it), so that the
 * egress gate knows which port a frame came in on even when a bridge routed it, where skb_iif
 * names the bridge. */
#define FC_PFC_INGRESS_TAG 0xfcd40000u
#define FC_PFC_INGRESS_TAG_MASK 0xffff0000u
#define FC_PFC_HOLD_MAP "fc_pfc_hold"
#define FC_PFC_COUNTS_MAP "fc_pfc_counts"
#define FC_PFC_HELD_MAP "fc_pfc_held"

/* .rodata: one program serves every port of a switch. Only 64-bit fields. */
struct fc_pfc_params {
  fc_pfc_u64 lossless_dscp_mask; /* bit d set: IPv4 DSCP d is the lossless class */
  fc_pfc_u64 lossless_priority;  /* the 802.1p priority of the lossless class (others: 0) */
  fc_pfc_u64 reinject_mark;      /* skb->mark of frames the loader sends back out: never held */
};

/* A port's pause state, keyed by its ifindex, written by the loader only. Frames of priority p are
 * held while bpf_ktime_get_ns() < hold_until_ns[p]. The loader sets it a little past the pause's
 * end and clears it once it sent the held frames back, so a loader that dies never holds a port
 * for longer than one pause. */
struct fc_pfc_hold {
  fc_pfc_u64 hold_until_ns[FC_PFC_PRIORITIES];
};

/* A port's counters, keyed by its ifindex, written by the program only. */
struct fc_pfc_counts {
  fc_pfc_u64 held[FC_PFC_PRIORITIES];             /* frames handed to the loader */
  fc_pfc_u64 dropped_no_room[FC_PFC_PRIORITIES];  /* the hand-over ring was full */
  fc_pfc_u64 dropped_oversize[FC_PFC_PRIORITIES]; /* longer than FC_PFC_MAX_FRAME */
};

/* A held frame, as the program writes it into the ring. */
struct fc_pfc_held_frame {
  fc_pfc_u32 ifindex;         /* the port it was leaving */
  fc_pfc_u32 priority;
  fc_pfc_u32 length;
  fc_pfc_u32 ingress_ifindex; /* the port it came in on: who fed the paused queue */
  unsigned char data[FC_PFC_MAX_FRAME];
};
