#pragma once
// IEEE 802.1Qbb PFC over DCB netlink (<linux/dcbnl.h>, net/dcb/dcbnl.c) as bytes: the
// RTM_GETDCB / RTM_SETDCB requests the kernel's dcb_doit() reads and the replies it writes.
// Pure functions, no sockets, so the wire format is tested byte for byte without a DCB-capable
// NIC; injectors/sys/dcb.h sends them. Decoders take untrusted bytes: malformed or truncated
// input is kInvalidArgument, never a read outside the span. Thread-safe (no state).

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"

namespace fabric_chaos::sys {

// struct ieee_pfc, field for field. Counters and delay are in the host's byte order, as the
// kernel copies the struct without conversion.
struct IeeePfc {
  uint8_t pfc_cap = 0;                    // how many traffic classes may have PFC enabled at once
  uint8_t pfc_en = 0;                     // bit p: PFC on for priority p
  uint8_t mbc = 0;                        // MACsec bypass capability
  uint16_t delay = 0;                     // allowance for the link delay, in bit times
  std::array<uint64_t, 8> requests{};     // PFC frames sent, per priority (read-only)
  std::array<uint64_t, 8> indications{};  // PFC frames received, per priority (read-only)

  bool operator==(const IeeePfc&) const = default;
};

// RTM_GETDCB, dcbmsg {AF_UNSPEC, DCB_CMD_IEEE_GET}, DCB_ATTR_IFNAME: a complete request with
// NLM_F_REQUEST only (the kernel answers with one RTM_GETDCB message or one NLMSG_ERROR) and
// nlmsg_pid 0. kInvalidArgument for a name the kernel could not hold (empty, > 15 bytes, ...).
core::Result<std::vector<uint8_t>> encodeIeeeGetRequest(const std::string& ifname, uint32_t seq);

// RTM_SETDCB, dcbmsg {AF_UNSPEC, DCB_CMD_IEEE_SET}, DCB_ATTR_IFNAME and DCB_ATTR_IEEE (nested)
// holding DCB_ATTR_IEEE_PFC = struct ieee_pfc (136 bytes, padding zeroed). Drivers ignore
// requests/indications on set, but they are sent as given.
core::Result<std::vector<uint8_t>> encodeIeeeSetPfcRequest(const std::string& ifname,
                                                           const IeeePfc& pfc, uint32_t seq);

// What one datagram from the kernel says about the request with sequence number `seq`.
struct DcbAnswer {
  bool found = false;          // a message in the datagram answers seq (an ack alone does not)
  int error = 0;               // found: the positive errno of an NLMSG_ERROR; 0 for a reply
  std::string extack;          // with error: the kernel's extended-ack text, when it sent one
  std::vector<uint8_t> reply;  // found, no error: the RTM_GETDCB / RTM_SETDCB message
};

// Walks every netlink message of `datagram`; messages of other sequence numbers are skipped.
// kInvalidArgument when a header lies about its length or an error message is cut short.
core::Result<DcbAnswer> findDcbAnswer(std::span<const uint8_t> datagram, uint32_t seq);

// The reply to DCB_CMD_IEEE_GET (one RTM_GETDCB message, header included): DCB_ATTR_IEEE's
// DCB_ATTR_IEEE_PFC, the local configuration (never DCB_ATTR_IEEE_PEER_PFC). kNotFound when the
// reply has none (a driver without ieee_getpfc, or whose ieee_getpfc failed); kInvalidArgument
// for anything malformed, another message type or command, or a PFC payload shorter than
// struct ieee_pfc (a longer one is read up to its size).
core::Result<IeeePfc> decodeIeeeGetReply(std::span<const uint8_t> message);

// The reply to DCB_CMD_IEEE_SET (one RTM_SETDCB message): DCB_ATTR_IEEE, here not a nest but a
// u8 holding the low byte of the driver's negative errno. Returns that errno (0: applied). An
// errno above 255 cannot be recovered: the kernel's ENOTSUPP (524) reads as 12. kNotFound when
// the reply has no DCB_ATTR_IEEE; kInvalidArgument as for the GET reply.
core::Result<int> decodeIeeeSetReply(std::span<const uint8_t> message);

}  // namespace fabric_chaos::sys
