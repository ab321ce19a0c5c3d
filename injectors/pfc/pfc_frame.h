#pragma once
// IEEE 802.1Qbb Priority Flow Control (PFC) pause frames, byte for byte: what the pfc_storm
// emitter puts on the wire and what a test or a receiver reads back. Pure and thread-safe; no
// system calls (the packet socket is injectors/sys/raw_packets.h).
//
// An XON ("resume now") is an ordinary PFC frame whose enabled classes carry pause time 0:
// pfcXon(mask), i.e. pfcPause(mask, 0). A receiver ends the pause of those priorities at once.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace fabric_chaos::injectors {

struct PfcPause {
  uint8_t class_enable = 0;          // bit p set: priority p's pause time applies
  std::array<uint16_t, 8> quanta{};  // per priority, in units of 512 bit times

  bool operator==(const PfcPause&) const = default;
};

inline constexpr size_t kPfcFrameBytes = 60;  // minimum Ethernet frame without FCS
using MacAddress = std::array<uint8_t, 6>;

// The MAC Control multicast address every PAUSE/PFC frame goes to; bridges never forward it.
inline constexpr MacAddress kPfcDestination = {0x01, 0x80, 0xC2, 0x00, 0x00, 0x01};
inline constexpr uint16_t kMacControlEthertype = 0x8808;
inline constexpr uint16_t kPfcOpcode = 0x0101;    // 802.1Qbb class-based flow control
inline constexpr uint16_t kPauseOpcode = 0x0001;  // 802.3x global PAUSE (not PFC)
// Header (14) + opcode (2) + class-enable vector (2) + eight pause times (16).
inline constexpr size_t kPfcFieldBytes = 34;

// dst 01:80:C2:00:00:01, src, ethertype 0x8808, opcode 0x0101, 16-bit class-enable vector
// (big-endian, low byte = priorities 0-7), eight 16-bit big-endian pause times (priority 0
// first), zero padding to 60 bytes. Pause times of classes not enabled are written as given.
std::array<uint8_t, kPfcFrameBytes> buildPfcFrame(const MacAddress& source, const PfcPause& pause);

// The pause a received frame carries; nullopt when it is not an 802.1Qbb PFC frame (wrong
// destination, ethertype or opcode, or shorter than the 34 bytes that carry the fields). The
// reserved high byte of the class-enable vector is ignored, as receivers do. Untagged frames only.
std::optional<PfcPause> parsePfcFrame(const uint8_t* data, size_t length);

// How long `quanta` pauses a link of `link_bits_per_second`: quanta * 512 / rate, in seconds
// (65535 quanta at 10 Gbit/s = 3.355 ms). 0 when the rate is not positive.
double pauseSeconds(uint16_t quanta, double link_bits_per_second);

// "3,5" -> 0b00101000. Priorities 0-7 separated by commas, at least one; repeats are allowed.
// kInvalidArgument names the offending item.
core::Result<uint8_t> parsePriorityList(const std::string& text);

// {3, 5} -> 0b00101000; kInvalidArgument for a priority outside 0-7 or an empty list.
core::Result<uint8_t> priorityMask(const std::vector<int>& priorities);

// The priorities of a mask in increasing order: 0b00101000 -> {3, 5}.
std::vector<int> prioritiesOf(uint8_t class_enable);

// Every class in `class_enable` paused for `quanta`; the other classes 0 and not enabled.
PfcPause pfcPause(uint8_t class_enable, uint16_t quanta);

// XON: the classes in `class_enable` resume at once (pause time 0).
inline PfcPause pfcXon(uint8_t class_enable) { return pfcPause(class_enable, 0); }

}  // namespace fabric_chaos::injectors
