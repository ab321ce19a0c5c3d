#pragma once
// Root qdisc control through rtnetlink: netem for packet impairments, and the exact capture and
// re-creation of whatever root qdisc a user had, so a fault can be reverted without disturbing it.
// netem, capture and restore messages are built with libnl-3's nl_msg/nla_* API (qdisc_raw.h):
// libnl-route's netem object cannot express the Gilbert-Elliott loss model, rate or ns delays, nor
// find Debian's distribution tables. Errors carry the kernel's extack text. Thread-safe.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace fabric_chaos::sys {

// Gilbert-Elliott loss in the textbook parameters, all in percent: p = P(good -> bad) and
// r = P(bad -> good) per packet, h = P(delivered | bad), k = P(delivered | good).
struct GilbertElliott {
  double p = 0;
  double r = 0;
  double h = 0;
  double k = 100;
};

// A netem qdisc as the user means it (percent, microseconds, bytes per second).
struct NetemSpec {
  double loss_percent = 0;
  double loss_correlation = 0;
  int64_t delay_us = 0;
  int64_t jitter_us = 0;
  double delay_correlation = 0;
  // "" or "uniform": netem's built-in uniform jitter; "normal", "pareto", "paretonormal": the
  // table iproute2 ships as <name>.dist (see netemDistributionDirs()).
  std::string distribution;
  // Replaces loss_percent/loss_correlation when set.
  std::optional<GilbertElliott> gilbert_elliott;
  double duplicate_percent = 0;
  double duplicate_correlation = 0;
  double corrupt_percent = 0;
  double corrupt_correlation = 0;
  double reorder_percent = 0;
  double reorder_correlation = 0;
  uint32_t reorder_gap = 0;  // 0 with reorder_percent > 0 means 1, as in tc
  uint64_t rate_bytes_per_sec = 0;
  uint32_t limit_packets = 0;  // 0 means tc's default, 1000
};

// What sch_netem receives, in the kernel's own units; one field per value sent. encodeNetemOptions
// writes them as TCA_OPTIONS = struct tc_netem_qopt followed by TCA_NETEM_* attributes (not a
// nested attribute: that is netem's wire format). Probabilities use netemProbability()'s scale.
struct NetemAttributes {
  // struct tc_netem_qopt. latency/jitter are psched ticks of 64 ns (PSCHED_NS2TICKS = ns >> 6),
  // not microseconds as the uapi comment says; clamped to UINT32_MAX.
  uint32_t latency_ticks = 0;
  uint32_t limit = 1000;
  uint32_t loss = 0;
  uint32_t gap = 0;
  uint32_t duplicate = 0;
  uint32_t jitter_ticks = 0;
  // TCA_NETEM_LATENCY64 / TCA_NETEM_JITTER64, s64 nanoseconds. netem_change() applies them after
  // the qopt ticks, so kernels that know them use these; older ones ignore them and use the ticks.
  int64_t latency_ns = 0;
  int64_t jitter_ns = 0;
  // TCA_NETEM_CORR
  uint32_t delay_corr = 0;
  uint32_t loss_corr = 0;
  uint32_t dup_corr = 0;
  // TCA_NETEM_REORDER
  uint32_t reorder = 0;
  uint32_t reorder_corr = 0;
  // TCA_NETEM_CORRUPT
  uint32_t corrupt = 0;
  uint32_t corrupt_corr = 0;
  // TCA_NETEM_RATE.rate in bytes/s; when >= 2^32 it is sent as UINT32_MAX plus TCA_NETEM_RATE64
  // (the kernel takes the larger of the two).
  uint64_t rate_bytes_per_sec = 0;
  // TCA_NETEM_LOSS { NETEM_LOSS_GE: struct tc_netem_gemodel }: h is P(delivered | bad) and
  // k1 = 1 - k is P(lost | good), the kernel's meaning (tc's "1-h" argument is inverted).
  bool ge = false;
  uint32_t ge_p = 0;
  uint32_t ge_r = 0;
  uint32_t ge_h = 0;
  uint32_t ge_k1 = 0;
  // TCA_NETEM_ECN, always sent so that a change clears it (0 = drop, not mark).
  uint32_t ecn = 0;
  // TCA_NETEM_DELAY_DIST: the table's name; the adapter loads <name>.dist. "" = none (uniform).
  std::string distribution;

  bool operator==(const NetemAttributes&) const = default;
};

// A top-level rtnetlink attribute of a qdisc message, kept as raw bytes.
struct RawAttribute {
  uint16_t type = 0;
  std::vector<uint8_t> data;
  bool operator==(const RawAttribute&) const = default;
};

struct QdiscInfo {
  std::string kind;  // "noqueue", "netem", "fq_codel", ...
  uint64_t packets = 0;
  uint64_t drops = 0;
  uint32_t handle = 0;  // 0: the kernel's default qdisc
  uint64_t bytes = 0;
  uint64_t overlimits = 0;
  uint64_t requeues = 0;
  uint64_t qlen = 0;
  uint64_t backlog = 0;
  std::vector<uint8_t> options = {};  // TCA_OPTIONS payload as dumped
};

// Enough of a root qdisc to re-create it: kind, handle and its configuration attributes exactly
// as the kernel dumped them (TCA_OPTIONS, ingress/egress block; no statistics).
struct SavedQdisc {
  std::string kind;
  uint32_t handle = 0;
  std::vector<RawAttribute> attributes;
  // Why re-creating this qdisc would not give the user back what they had ("" when it would):
  // child qdiscs, classes or filters hang off it, or a size table is attached.
  std::string unrestorable;

  // Handle 0 is what the kernel gives the default qdisc it attaches itself (noqueue,
  // pfifo_fast, mq, fq_codel...); deleting the root brings it back.
  bool isKernelDefault() const { return handle == 0; }
  bool operator==(const SavedQdisc&) const = default;
};

class Qdiscs {
 public:
  virtual ~Qdiscs() = default;
  // The root qdisc of ifname with its statistics and options, if one is attached.
  virtual core::Result<std::optional<QdiscInfo>> getRoot(const std::string& netns,
                                                         const std::string& ifname) = 0;
  // Makes the root qdisc a netem with exactly this spec: an existing root netem is changed in
  // place (statistics and queue kept) unless it could keep state the spec does not override (a
  // delay table or time slots), then, like any other root, it is replaced by a fresh netem.
  virtual core::Status replaceRootNetem(const std::string& netns, const std::string& ifname,
                                        const NetemSpec& spec) = 0;
  // Deletes the root qdisc; OK when there is none or only the kernel's default.
  virtual core::Status deleteRoot(const std::string& netns, const std::string& ifname) = 0;
  // The root qdisc in the form restoreRoot() takes; nullopt when the device has none.
  virtual core::Result<std::optional<SavedQdisc>> saveRoot(const std::string& netns,
                                                           const std::string& ifname) = 0;
  // Creates saved as the root qdisc (RTM_NEWQDISC, NLM_F_CREATE|NLM_F_EXCL, same handle); fails
  // with kAlreadyExists when a non-default root is attached. A kernel default is a no-op.
  virtual core::Status restoreRoot(const std::string& netns, const std::string& ifname,
                                   const SavedQdisc& saved) = 0;
  // Whether the kernel knows qdisc `kind` (tries it on lo in a scratch namespace).
  virtual core::Status probeKind(const std::string& kind) = 0;
};

std::unique_ptr<Qdiscs> makeNetlinkQdiscs();

// --- Pure translation (table-tested; no system calls) ---

// netem's probability scale: percent in [0, 100] -> 0..UINT32_MAX (100% = 0xffffffff), what the
// kernel compares against a uniform u32. Out-of-range input is clamped.
uint32_t netemProbability(double percent);
// The inverse, in percent rounded to 1e-6.
double netemPercent(uint32_t probability);

// Checks the ranges the kernel cannot represent; kInvalidArgument names the field.
core::Status validateNetemSpec(const NetemSpec& spec);
// spec -> the values sent (see NetemAttributes). Expects a valid spec.
NetemAttributes netemAttributes(const NetemSpec& spec);

// Serialises attributes (and, when not empty, the delay table) into the TCA_OPTIONS payload.
std::vector<uint8_t> encodeNetemOptions(const NetemAttributes& attributes,
                                        const std::vector<int16_t>& delay_table = {});
// Parses a dumped netem TCA_OPTIONS payload. The kernel never dumps the delay table, so
// `distribution` stays "". kInvalidArgument when the payload is truncated.
core::Result<NetemAttributes> decodeNetemOptions(const std::vector<uint8_t>& options);

// iproute2's .dist format: '#' comment lines, then whitespace-separated integers (s16, scaled by
// NETEM_DIST_SCALE). kInvalidArgument for a value outside s16, an empty table or more than
// NETEM_DIST_MAX (16384) values.
core::Result<std::vector<int16_t>> parseNetemDistTable(const std::string& text);
// Where the adapter looks for <name>.dist, in order: Debian/Ubuntu's multiarch iproute2 dir
// (/usr/lib/x86_64-linux-gnu/tc), then /usr/lib/tc, /usr/lib64/tc, /usr/local/lib/tc. Never the
// working directory (libnl's loader also tries "./").
std::vector<std::string> netemDistributionDirs();

// "8001:0" style (hex major:minor), as tc prints handles; parseQdiscHandle takes "8001:",
// "8001:0" or "1:".
std::string formatQdiscHandle(uint32_t handle);
std::optional<uint32_t> parseQdiscHandle(const std::string& text);

}  // namespace fabric_chaos::sys
