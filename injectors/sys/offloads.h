#pragma once
// Segmentation offloads of a network device, through the SIOCETHTOOL ioctl (the features string
// set, ETHTOOL_GFEATURES / ETHTOOL_SFEATURES, as `ethtool -k/-K` uses it). A device with
// TSO/GSO/GRO hands a qdisc or an nftables hook one ~64 KB super-packet where the wire carries
// forty, so "drop 10 % of packets" would drop 10 % of super-packets; the labs turn these off so
// a packet seen by a fault is a packet on the wire. Errors carry the errno. Thread-safe.

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"

namespace fabric_chaos::sys {

struct OffloadChange {
  std::vector<std::string> turned_off;  // segmentation features that were on and are now off
  // Segmentation features still on afterwards, with why: "fixed" (the driver does not let them
  // change) or "refused" (the change was asked for and the kernel kept them on).
  std::map<std::string, std::string> still_on;
};

class Offloads {
 public:
  virtual ~Offloads() = default;
  // Every feature of the device (ethtool's names) and whether it is active now. kNotFound when
  // the device or namespace does not exist.
  virtual core::Result<std::map<std::string, bool>> features(const std::string& netns,
                                                             const std::string& ifname) = 0;
  // Turns every changeable segmentation feature (isSegmentationOffload) off in one request and
  // reads the result back. Turning off what is already off changes nothing.
  virtual core::Result<OffloadChange> disableSegmentation(const std::string& netns,
                                                          const std::string& ifname) = 0;
};

std::unique_ptr<Offloads> makeEthtoolOffloads();

// --- Pure (table-tested) ---

// Whether an ethtool feature name makes the device (or the stack on its behalf) carry more than
// one wire packet in one skb: every "*-segmentation" (TSO, GSO, USO, tunnel and SCTP GSO),
// tx-gso-list, tx-gso-partial, and on receive rx-gro, rx-gro-hw, rx-lro, rx-gro-list and
// rx-udp-gro-forwarding.
bool isSegmentationOffload(const std::string& feature);

}  // namespace fabric_chaos::sys
