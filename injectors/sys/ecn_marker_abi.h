/* What the ECN marker's BPF program (lab/bpf/ecn_marker.bpf.c) and its loader
 * (injectors/sys/ecn_marker.cc) must agree on: the per-port parameters the loader writes into the
 * program's .rodata before load, the counters map it reads back, and the marking formula, which
 * lab/ecn_model.cc also uses so the unit tests check the kernel's arithmetic. Plain C, no system
 * headers: it is compiled for the bpf target as well as into C++. */
#pragma once

typedef unsigned long long fc_u64;

/* Probabilities are fixed point: FC_ECN_PROB_ONE is 1. A packet is marked when 24 random bits are
 * below the probability, so 1 always marks and 0 never does. */
#define FC_ECN_PROB_ONE (1ULL << 24)

/* Traffic classes, as lab/port_model.h sorts them: IPv4 DSCP in the lossless set, else best effort.
 */
#define FC_ECN_CLASS_LOSSLESS 0
#define FC_ECN_CLASS_BEST_EFFORT 1
#define FC_ECN_CLASSES 2

/* Names of the program and its maps in the kernel (15 characters at most). */
#define FC_ECN_PROG_NAME "fc_ecn_marker"
#define FC_ECN_COUNTS_MAP "fc_ecn_counts"

/* The one `const volatile` global of the program; .rodata holds nothing else. Only 64-bit fields,
 * so C and C++ lay it out alike. */
struct fc_ecn_params {
  fc_u64 rate_bytes_per_sec; /* the port's line rate R, in bytes */
  fc_u64 buffer_bytes;       /* each class's drop-tail buffer (bfifo limit) */
  fc_u64 kmin_bytes;         /* marking starts above this backlog */
  fc_u64 kmax_bytes;         /* every ECT packet is marked above this backlog */
  fc_u64 pmax;               /* probability at kmax, out of FC_ECN_PROB_ONE */
  fc_u64 lossless_dscp_mask; /* bit d set: DSCP d goes to the lossless class */
};

/* One entry per class of the counters map (an array indexed by class). */
struct fc_ecn_counts {
  fc_u64 packets; /* every packet of the class that reached the port */
  fc_u64 ect;     /* of them, ECN-capable (ECT(0), ECT(1) or already CE) */
  fc_u64 marked;  /* ECT(0)/ECT(1) packets this marker set to CE */
};

/* DCQCN/RED-style: 0 below kmin, linear from 0 to pmax between kmin and kmax, 1 above kmax. */
static inline fc_u64 fc_ecn_mark_probability(fc_u64 backlog, fc_u64 kmin, fc_u64 kmax,
                                             fc_u64 pmax) {
  if (backlog < kmin) return 0;
  if (backlog > kmax) return FC_ECN_PROB_ONE;
  if (kmax == kmin) return pmax;
  return pmax * (backlog - kmin) / (kmax - kmin);
}
