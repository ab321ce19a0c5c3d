#pragma once
// Completing the transport checksum of an Ethernet frame taken mid-stack. A frame the PFC gate
// holds was caught on its way out of a switch port, and a sender with checksum offload (every
// veth by default) leaves TCP and UDP checksums partial there: only the pseudo-header's sum, to be
// completed by the NIC. Sent back out as raw bytes, such a frame would be dropped by its receiver
// as corrupt. So the PFC agent recomputes them before it sends a held frame. Pure; any thread.

#include <cstdint>
#include <vector>

namespace fabric_chaos::lab {

// Recomputes the TCP or UDP checksum of an untagged or 802.1Q-tagged Ethernet frame carrying
// IPv4 (not a fragment) or IPv6 (TCP or UDP as the first next header). A complete checksum is
// rewritten with the same value; an IPv4 UDP checksum of 0 (none) is left alone. Returns whether
// it wrote one; other frames, and truncated ones, are left as they are.
bool completeTransportChecksum(std::vector<uint8_t>& frame);

}  // namespace fabric_chaos::lab
