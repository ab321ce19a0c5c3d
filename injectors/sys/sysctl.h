#pragma once
// Kernel settings of a network namespace (/proc/sys/net/...), written from a thread inside the
// namespace: /proc/sys/net answers for the namespace of the thread that opens it, so no
// `ip netns exec` (a process and a remount per setting) is needed. Thread-safe.

#include <memory>
#include <string>

#include "core/status.h"

namespace fabric_chaos::sys {

class NetnsSysctls {
 public:
  virtual ~NetnsSysctls() = default;
  // key as `sysctl` spells it ("net.ipv4.ip_forward"); netns "" is the caller's namespace.
  // kInvalidArgument for a key that is not a plain dotted name; kNotFound when the namespace or
  // the setting does not exist (the message names both); the errno otherwise.
  virtual core::Status set(const std::string& netns, const std::string& key,
                           const std::string& value) = 0;
  // The value with its trailing newline removed.
  virtual core::Result<std::string> get(const std::string& netns, const std::string& key) = 0;
};

std::unique_ptr<NetnsSysctls> makeProcSysctls();

}  // namespace fabric_chaos::sys
