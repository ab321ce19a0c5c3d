#include "injectors/pfc/pfc_frame.h"

#include <algorithm>

namespace fabric_chaos::injectors {
namespace {

// Offsets inside the frame.
constexpr size_t kDstOffset = 0;
constexpr size_t kSrcOffset = 6;
constexpr size_t kEthertypeOffset = 12;
constexpr size_t kOpcodeOffset = 14;
constexpr size_t kClassEnableOffset = 16;
constexpr size_t kPauseTimesOffset = 18;

void putBigEndian16(uint8_t* at, uint16_t value) {
  at[0] = static_cast<uint8_t>(value >> 8);
  at[1] = static_cast<uint8_t>(value & 0xff);
}

uint16_t getBigEndian16(const uint8_t* at) {
  return static_cast<uint16_t>((uint16_t{at[0]} << 8) | at[1]);
}

core::Status invalidPriority(const std::string& item) {
  return core::Status(core::StatusCode::kInvalidArgument,
                      "priority \"" + item + "\" is not a number from 0 to 7");
}

}  // namespace

std::array<uint8_t, kPfcFrameBytes> buildPfcFrame(const MacAddress& source, const PfcPause& pause) {
  std::array<uint8_t, kPfcFrameBytes> frame{};
  std::copy(kPfcDestination.begin(), kPfcDestination.end(), frame.begin() + kDstOffset);
  std::copy(source.begin(), source.end(), frame.begin() + kSrcOffset);
  putBigEndian16(&frame[kEthertypeOffset], kMacControlEthertype);
  putBigEndian16(&frame[kOpcodeOffset], kPfcOpcode);
  putBigEndian16(&frame[kClassEnableOffset], pause.class_enable);
  for (size_t p = 0; p < pause.quanta.size(); ++p) {
    putBigEndian16(&frame[kPauseTimesOffset + 2 * p], pause.quanta[p]);
  }
  return frame;
}

std::optional<PfcPause> parsePfcFrame(const uint8_t* data, size_t length) {
  if (data == nullptr || length < kPfcFieldBytes) return std::nullopt;
  if (!std::equal(kPfcDestination.begin(), kPfcDestination.end(), data + kDstOffset)) {
    return std::nullopt;
  }
  if (getBigEndian16(data + kEthertypeOffset) != kMacControlEthertype) return std::nullopt;
  if (getBigEndian16(data + kOpcodeOffset) != kPfcOpcode) return std::nullopt;
  PfcPause pause;
  pause.class_enable = static_cast<uint8_t>(getBigEndian16(data + kClassEnableOffset) & 0xff);
  for (size_t p = 0; p < pause.quanta.size(); ++p) {
    pause.quanta[p] = getBigEndian16(data + kPauseTimesOffset + 2 * p);
  }
  return pause;
}

double pauseSeconds(uint16_t quanta, double link_bits_per_second) {
  if (!(link_bits_per_second > 0)) return 0;
  return static_cast<double>(quanta) * 512.0 / link_bits_per_second;
}

core::Result<uint8_t> parsePriorityList(const std::string& text) {
  if (text.empty()) {
    return core::Status(core::StatusCode::kInvalidArgument, "no priority given (e.g. \"3,4\")");
  }
  std::vector<int> priorities;
  size_t start = 0;
  for (;;) {
    const size_t comma = text.find(',', start);
    const std::string item =
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (item.size() != 1 || item[0] < '0' || item[0] > '7') return invalidPriority(item);
    priorities.push_back(item[0] - '0');
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return priorityMask(priorities);
}

core::Result<uint8_t> priorityMask(const std::vector<int>& priorities) {
  if (priorities.empty()) {
    return core::Status(core::StatusCode::kInvalidArgument, "no priority given");
  }
  uint8_t mask = 0;
  for (int p : priorities) {
    if (p < 0 || p > 7) return invalidPriority(std::to_string(p));
    mask = static_cast<uint8_t>(mask | (1U << p));
  }
  return mask;
}

std::vector<int> prioritiesOf(uint8_t class_enable) {
  std::vector<int> priorities;
  for (int p = 0; p < 8; ++p) {
    if ((class_enable & (1U << p)) != 0) priorities.push_back(p);
  }
  return priorities;
}

PfcPause pfcPause(uint8_t class_enable, uint16_t quanta) {
  PfcPause pause;
  pause.class_enable = class_enable;
  for (int p = 0; p < 8; ++p) {
    if ((class_enable & (1U << p)) != 0) pause.quanta[static_cast<size_t>(p)] = quanta;
  }
  return pause;
}

}  // namespace fabric_chaos::injectors
