#pragma once
// IEEE PFC configuration of a network device through DCB netlink, what `dcb pfc show|set` does:
// the only code that changes a NIC's PFC settings. A device without DCB ops (veth, virtio-net,
// most virtual devices: the kernel answers EOPNOTSUPP) is kNotSupported and a missing one
// kNotFound, both naming the interface; other failures carry the kernel's errno as origin.
// Thread-safe: every call opens its own netlink socket inside the namespace.

#include <memory>
#include <string>

#include "core/status.h"
#include "injectors/sys/dcb_codec.h"

namespace fabric_chaos::sys {

class Dcb {
 public:
  virtual ~Dcb();
  // The device's local PFC configuration and counters (DCB_CMD_IEEE_GET); netns "" is the
  // caller's. kNotSupported also when a DCB-capable driver reports no IEEE PFC (CEE-only).
  virtual core::Result<IeeePfc> getIeeePfc(const std::string& netns, const std::string& ifname) = 0;
  // Applies pfc_cap, pfc_en, mbc and delay (DCB_CMD_IEEE_SET; drivers ignore the counters).
  // Needs CAP_NET_ADMIN. A driver's refusal comes back with its errno. The kernel skips PFC
  // without a word for a driver that has DCB ops but no ieee_setpfc: that is OK here too.
  virtual core::Status setIeeePfc(const std::string& netns, const std::string& ifname,
                                  const IeeePfc& pfc) = 0;
};

std::unique_ptr<Dcb> makeKernelDcb();

}  // namespace fabric_chaos::sys
