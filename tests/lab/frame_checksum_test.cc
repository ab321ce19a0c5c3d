#include "lab/frame_checksum.h"

#include <gtest/gtest.h>

#include <string>

namespace fabric_chaos::lab {
namespace {

// Frames built, and their checksums computed, by a separate Python script: 10.200.0.1:40000 ->
// 10.200.0.2, payload "fabric-chaos PFC!".
std::vector<uint8_t> hex(const std::string& text) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i + 1 < text.size(); i += 2) {
    out.push_back(static_cast<uint8_t>(std::stoi(text.substr(i, 2), nullptr, 16)));
  }
  return out;
}

const std::string kTcpComplete =
    "02000000000202000000000108004568003900014000400624c40ac800010ac800029c40145100000001000000025"
    "018faf02fa100006661627269632d6368616f732050464321";
// The same segment as checksum offload leaves it: the pseudo-header's sum in the field.
const std::string kTcpPartial =
    "02000000000202000000000108004568003900014000400624c40ac800010ac800029c40145100000001000000025"
    "018faf015be00006661627269632d6368616f732050464321";
const std::string kUdpComplete =
    "02000000000202000000000108004500002d000140004011252d0ac800010ac800029c4012b700197c2f666162726"
    "9632d6368616f732050464321";
const std::string kTcp6Complete =
    "02000000000202000000000186dd6000000000250640fd000000000000000000000000000001fd000000000000000"
    "0000000000000029c40145100000001000000025018faf04b2f00006661627269632d6368616f732050464321";

TEST(FrameChecksum, CompletesAPartialTcpChecksum) {
  std::vector<uint8_t> frame = hex(kTcpPartial);
  EXPECT_TRUE(completeTransportChecksum(frame));
  EXPECT_EQ(frame, hex(kTcpComplete));
}

TEST(FrameChecksum, LeavesCompleteChecksumsAsTheyAre) {
  for (const std::string& text : {kTcpComplete, kUdpComplete, kTcp6Complete}) {
    std::vector<uint8_t> frame = hex(text);
    EXPECT_TRUE(completeTransportChecksum(frame));
    EXPECT_EQ(frame, hex(text));
  }
}

TEST(FrameChecksum, CompletesUdpAndIpv6AndTaggedFrames) {
  std::vector<uint8_t> udp = hex(kUdpComplete);
  udp[40] = 0x12;  // a wrong checksum (offset 14 + 20 + 6)
  EXPECT_TRUE(completeTransportChecksum(udp));
  EXPECT_EQ(udp, hex(kUdpComplete));
  std::vector<uint8_t> tcp6 = hex(kTcp6Complete);
  tcp6[14 + 40 + 16] = 0;
  EXPECT_TRUE(completeTransportChecksum(tcp6));
  EXPECT_EQ(tcp6, hex(kTcp6Complete));
  std::vector<uint8_t> tagged = hex(kTcpPartial);
  tagged.insert(tagged.begin() + 12, {0x81, 0x00, 0x60, 0x03});  // 802.1Q, PCP 3, VLAN 3
  std::vector<uint8_t> expected = hex(kTcpComplete);
  expected.insert(expected.begin() + 12, {0x81, 0x00, 0x60, 0x03});
  EXPECT_TRUE(completeTransportChecksum(tagged));
  EXPECT_EQ(tagged, expected);
}

TEST(FrameChecksum, LeavesOtherFramesAlone) {
  std::vector<uint8_t> udp_without = hex(kUdpComplete);
  udp_without[40] = 0;
  udp_without[41] = 0;  // IPv4 UDP sent without a checksum
  const std::vector<uint8_t> copy = udp_without;
  EXPECT_FALSE(completeTransportChecksum(udp_without));
  EXPECT_EQ(udp_without, copy);
  std::vector<uint8_t> fragment = hex(kTcpPartial);
  fragment[14 + 6] = 0x20;  // more fragments
  EXPECT_FALSE(completeTransportChecksum(fragment));
  std::vector<uint8_t> truncated = hex(kTcpPartial);
  truncated.resize(40);
  EXPECT_FALSE(completeTransportChecksum(truncated));
  std::vector<uint8_t> arp(60, 0);
  arp[12] = 0x08;
  arp[13] = 0x06;
  EXPECT_FALSE(completeTransportChecksum(arp));
}

}  // namespace
}  // namespace fabric_chaos::lab
