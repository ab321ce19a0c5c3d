#pragma once
// Every qdisc's statistics in one network namespace, read with one rtnetlink dump (libnl-route-3):
// what the lab switch's telemetry samples every 100 ms (lab/switch_counters.h). Read-only.
// Thread-safe: each call uses a pooled socket of the namespace.

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace fabric_chaos::sys {

struct QdiscCounters {
  std::string ifname;
  uint32_t handle = 0;  // major:minor as the kernel holds it; tc's "10:" (hex) is 0x00100000
  uint32_t parent = 0;  // TC_H_ROOT (0xffffffff) for a root qdisc
  std::string kind;     // "htb", "bfifo", "clsact", ...
  uint64_t bytes = 0;   // sent
  uint64_t packets = 0;
  uint64_t drops = 0;
  uint64_t overlimits = 0;
  uint64_t backlog_bytes = 0;  // queued now
  uint64_t qlen = 0;           // packets queued now
};

// Every qdisc of every interface in netns ("" = the caller's). kNotFound when the namespace does
// not exist.
core::Result<std::vector<QdiscCounters>> readQdiscCounters(const std::string& netns);

// "10:" for 0x000a0000, "1:20" for 0x00010020, "root" for TC_H_ROOT: as tc prints handles.
std::string formatHandle(uint32_t handle);

}  // namespace fabric_chaos::sys
