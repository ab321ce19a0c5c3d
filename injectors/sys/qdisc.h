#pragma once
// Root qdisc control through rtnetlink (libnl-route-3): netem for packet impairments.
// Issue 2 needs loss only; the full netem spec arrives with the VM lab. Thread-safe.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/status.h"

namespace fabric_chaos::sys {

struct NetemSpec {
  double loss_percent = 0;
  double loss_correlation = 0;
  int64_t delay_us = 0;
  int64_t jitter_us = 0;
};

struct QdiscInfo {
  std::string kind;  // "noqueue", "netem", "fq_codel", ...
  uint64_t packets = 0;
  uint64_t drops = 0;
};

class Qdiscs {
 public:
  virtual ~Qdiscs() = default;
  // The root qdisc of ifname, if one is attached.
  virtual core::Result<std::optional<QdiscInfo>> getRoot(const std::string& netns,
                                                         const std::string& ifname) = 0;
  // Adds or replaces the root qdisc with netem.
  virtual core::Status replaceRootNetem(const std::string& netns, const std::string& ifname,
                                        const NetemSpec& spec) = 0;
  // Deletes the root qdisc; OK when there is none.
  virtual core::Status deleteRoot(const std::string& netns, const std::string& ifname) = 0;
  // Whether the kernel knows qdisc `kind` (tries it on lo in a scratch namespace).
  virtual core::Status probeKind(const std::string& kind) = 0;
};

std::unique_ptr<Qdiscs> makeNetlinkQdiscs();

// netem's probability scale: percent in [0, 100] -> 0..UINT32_MAX (100% = 0xffffffff), which is
// what libnl's rtnl_netem_set_loss()/_correlation() pass to the kernel unchanged. Out-of-range
// input is clamped.
uint32_t netemProbability(double percent);

}  // namespace fabric_chaos::sys
