#pragma once
// The lab switch's ECN marker on one port (docs/lab.md, "ECN marking"): libbpf loads a fresh
// instance of the embedded BPF object (lab/bpf/ecn_marker.bpf.c) with that port's parameters and
// attaches it as a direct-action cls_bpf filter on the port's clsact egress. The tc filter holds
// the program, so it keeps marking after this process exits, until the port or its clsact qdisc
// goes, or detachEcnMarker removes it. Failures are ordinary results (no root, no such port, the
// kernel refused the program). Thread-safe: each call works on its own thread inside the namespace.

#include <cstdint>
#include <string>

#include "core/status.h"

namespace fabric_chaos::sys {

// One port's marker, as the program reads it (injectors/sys/ecn_marker_abi.h).
struct EcnMarkerConfig {
  int64_t rate_bps = 0;      // the port's line rate; the virtual queues drain at it
  int64_t buffer_bytes = 0;  // each class's drop-tail buffer: what would overflow is not queued
  int64_t kmin_bytes = 0;    // no marks at or below this backlog
  int64_t kmax_bytes = 0;    // every ECT packet marked above it
  uint64_t pmax = 0;         // probability at kmax, out of kEcnProbabilityOne
  uint64_t lossless_dscp_mask = 0;  // bit d: IPv4 DSCP d is the lossless class
};

// Fixed-point 1 of EcnMarkerConfig::pmax (FC_ECN_PROB_ONE).
inline constexpr uint64_t kEcnProbabilityOne = uint64_t{1} << 24;

// What the marker counted in one traffic class since it was attached.
struct EcnClassCounts {
  uint64_t packets = 0;  // every packet of the class
  uint64_t ect = 0;      // ECN-capable ones (ECT(0), ECT(1), or CE already)
  uint64_t marked = 0;   // ECT packets it set to CE
};

struct EcnMarks {
  EcnClassCounts lossless;
  EcnClassCounts best_effort;
  uint64_t marked() const { return lossless.marked + best_effort.marked; }
};

// Loads a marker for `ifname` in `netns` ("" = the caller's namespace) and attaches it to the
// port's egress, adding the clsact qdisc when missing and replacing a marker already there.
// kNotFound: no such namespace or interface; kPermissionDenied: not root; kNotSupported: the
// kernel refused the program or its maps (the verifier's last words, or no BTF for its lock).
core::Status attachEcnMarker(const std::string& netns, const std::string& ifname,
                             const EcnMarkerConfig& config);

// Removes the marker's filter only. The clsact qdisc stays, with any other filter on it (a leaf
// host port's flow-hash reset on ingress, injectors/sys/flow_hash_reset.h): removing the qdisc
// would silently take those too, and an empty clsact passes every packet untouched. It goes with
// the port. OK when there is no marker.
core::Status detachEcnMarker(const std::string& netns, const std::string& ifname);

// The attached marker's counters, found through the filter's program id and that program's maps.
// kNotFound when the port has no marker.
core::Result<EcnMarks> readEcnMarks(const std::string& netns, const std::string& ifname);

}  // namespace fabric_chaos::sys
