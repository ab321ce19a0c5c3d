// 802.1Qbb PFC frames: every byte of a built frame, the parse of it back, frames that are not PFC
// (802.3x PAUSE, another ethertype or destination, too short), pause durations and priority
// lists. Pure functions from injectors/pfc/pfc_frame.h.
#include "injectors/pfc/pfc_frame.h"

#include <gtest/gtest.h>

#include <functional>
#include <vector>

namespace fabric_chaos::injectors {
namespace {

using core::StatusCode;

constexpr MacAddress kSource = {0x02, 0x11, 0x22, 0x33, 0x44, 0x55};

TEST(PfcFrame, EveryByteOfABuiltFrame) {
  PfcPause pause;
  pause.class_enable = 0b00101000;  // priorities 3 and 5
  pause.quanta = {0x0000, 0x0102, 0x0304, 0xFFFF, 0x0506, 0x1234, 0x0708, 0xABCD};
  const auto frame = buildPfcFrame(kSource, pause);
  ASSERT_EQ(frame.size(), 60u);
  const std::vector<uint8_t> expected_fields = {
      0x01, 0x80, 0xC2, 0x00, 0x00, 0x01,  // 0-5: destination, the MAC Control multicast
      0x02, 0x11, 0x22, 0x33, 0x44, 0x55,  // 6-11: source
      0x88, 0x08,                          // 12-13: ethertype MAC Control
      0x01, 0x01,                          // 14-15: opcode PFC
      0x00, 0x28,                          // 16-17: class-enable vector, priorities 3 and 5
      0x00, 0x00,                          // 18-19: priority 0's pause time
      0x01, 0x02,                          // 20-21: priority 1
      0x03, 0x04,                          // 22-23: priority 2
      0xFF, 0xFF,                          // 24-25: priority 3
      0x05, 0x06,                          // 26-27: priority 4
      0x12, 0x34,                          // 28-29: priority 5
      0x07, 0x08,                          // 30-31: priority 6
      0xAB, 0xCD,                          // 32-33: priority 7
  };
  ASSERT_EQ(expected_fields.size(), kPfcFieldBytes);
  for (size_t i = 0; i < frame.size(); ++i) {
    const uint8_t want = i < expected_fields.size() ? expected_fields[i] : 0;  // 34-59: padding
    EXPECT_EQ(frame[i], want) << "offset " << i;
  }
}

TEST(PfcFrame, AllPrioritiesEnabledFillsTheLowByteOnly) {
  const auto frame = buildPfcFrame(kSource, pfcPause(0xFF, 7));
  EXPECT_EQ(frame[16], 0x00);
  EXPECT_EQ(frame[17], 0xFF);
  for (size_t p = 0; p < 8; ++p) {
    EXPECT_EQ(frame[18 + 2 * p], 0x00) << p;
    EXPECT_EQ(frame[19 + 2 * p], 0x07) << p;
  }
}

TEST(PfcFrame, RoundTrip) {
  for (uint8_t mask : {uint8_t{0x01}, uint8_t{0x18}, uint8_t{0x80}, uint8_t{0xFF}}) {
    PfcPause pause = pfcPause(mask, 65535);
    pause.quanta[0] = 42;  // a class not enabled keeps what was written
    const auto frame = buildPfcFrame(kSource, pause);
    auto parsed = parsePfcFrame(frame.data(), frame.size());
    ASSERT_TRUE(parsed.has_value()) << int{mask};
    EXPECT_EQ(*parsed, pause) << int{mask};
  }
}

TEST(PfcFrame, XonIsPauseTimeZeroForTheEnabledClasses) {
  const PfcPause xon = pfcXon(0b00011000);
  EXPECT_EQ(xon.class_enable, 0b00011000);
  for (uint16_t q : xon.quanta) EXPECT_EQ(q, 0);
  const auto frame = buildPfcFrame(kSource, xon);
  auto parsed = parsePfcFrame(frame.data(), frame.size());
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(parsed->class_enable, 0b00011000);
  EXPECT_EQ(parsed->quanta[3], 0);
  EXPECT_EQ(parsed->quanta[4], 0);
}

TEST(PfcFrame, PauseSetsOnlyTheListedClasses) {
  const PfcPause pause = pfcPause(0b00010100, 1000);
  const std::array<uint16_t, 8> expected = {0, 0, 1000, 0, 1000, 0, 0, 0};
  EXPECT_EQ(pause.quanta, expected);
}

TEST(PfcFrame, ParseAcceptsTheFieldsWithoutPaddingAndIgnoresTheReservedByte) {
  auto frame = buildPfcFrame(kSource, pfcPause(0x08, 100));
  EXPECT_TRUE(parsePfcFrame(frame.data(), kPfcFieldBytes).has_value());
  frame[16] = 0xAA;  // reserved high byte of the class-enable vector
  auto parsed = parsePfcFrame(frame.data(), frame.size());
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(parsed->class_enable, 0x08);
}

TEST(PfcFrame, Rejects) {
  using Frame = std::array<uint8_t, kPfcFrameBytes>;
  const Frame good = buildPfcFrame(kSource, pfcPause(0x08, 65535));
  struct Case {
    const char* name;
    std::function<void(Frame&)> spoil;
  };
  const std::vector<Case> cases = {
      {"802.3x global PAUSE, opcode 0x0001", [](Frame& f) { f[15] = 0x01, f[14] = 0x00; }},
      {"opcode 0x0002 (EPON GATE)", [](Frame& f) { f[14] = 0x00, f[15] = 0x02; }},
      {"opcode 0x0100", [](Frame& f) { f[15] = 0x00; }},
      {"ethertype 0x0800 (IPv4)", [](Frame& f) { f[12] = 0x08, f[13] = 0x00; }},
      {"ethertype 0x8809 (slow protocols)", [](Frame& f) { f[13] = 0x09; }},
      {"destination 01:80:C2:00:00:02", [](Frame& f) { f[5] = 0x02; }},
      {"unicast destination", [](Frame& f) { f[0] = 0x02; }},
  };
  for (const Case& c : cases) {
    Frame frame = good;
    c.spoil(frame);
    EXPECT_FALSE(parsePfcFrame(frame.data(), frame.size()).has_value()) << c.name;
  }
  EXPECT_FALSE(parsePfcFrame(good.data(), kPfcFieldBytes - 1).has_value()) << "short buffer";
  EXPECT_FALSE(parsePfcFrame(good.data(), 14).has_value()) << "header only";
  EXPECT_FALSE(parsePfcFrame(good.data(), 0).has_value()) << "empty";
  EXPECT_FALSE(parsePfcFrame(nullptr, 60).has_value()) << "null";
}

TEST(PfcFrame, PauseSeconds) {
  struct Case {
    uint16_t quanta;
    double bits_per_second;
    double seconds;
  };
  const std::vector<Case> cases = {
      {65535, 10e9, 3.355392e-3},   // the classic figure: 3.355 ms at 10 Gbit/s
      {65535, 100e9, 335.5392e-6},  // 335.5 us at 100 Gbit/s
      {65535, 400e9, 83.8848e-6},   // 83.9 us at 400 Gbit/s
      {65535, 1e9, 33.55392e-3},    // 33.6 ms at 1 Gbit/s
      {1, 10e9, 51.2e-9},           // one quantum = 512 bit times
      {0, 10e9, 0},                 // XON
      {65535, 0, 0},                // no rate: no meaningful answer
  };
  for (const Case& c : cases) {
    EXPECT_NEAR(pauseSeconds(c.quanta, c.bits_per_second), c.seconds, c.seconds * 1e-9 + 1e-15)
        << c.quanta << " quanta at " << c.bits_per_second;
  }
}

TEST(PfcPriorities, ParseList) {
  struct Case {
    const char* text;
    int mask;  // -1: rejected
  };
  const std::vector<Case> cases = {
      {"3", 0x08},   {"3,5", 0x28}, {"0,7", 0x81}, {"0,1,2,3,4,5,6,7", 0xFF},
      {"4,3", 0x18}, {"3,3", 0x08}, {"", -1},      {"8", -1},
      {"-1", -1},    {"3,", -1},    {",3", -1},    {"3,,4", -1},
      {"3 ,4", -1},  {"34", -1},    {"a", -1},     {"3;4", -1},
  };
  for (const Case& c : cases) {
    auto mask = parsePriorityList(c.text);
    if (c.mask < 0) {
      ASSERT_FALSE(mask.isOk()) << '"' << c.text << '"';
      EXPECT_EQ(mask.status().code(), StatusCode::kInvalidArgument) << c.text;
    } else {
      ASSERT_TRUE(mask.isOk()) << c.text << ": " << mask.status().toString();
      EXPECT_EQ(*mask, c.mask) << c.text;
    }
  }
}

TEST(PfcPriorities, MaskFromVectorAndBack) {
  auto mask = priorityMask({3, 4});
  ASSERT_TRUE(mask.isOk());
  EXPECT_EQ(*mask, 0x18);
  EXPECT_EQ(prioritiesOf(*mask), (std::vector<int>{3, 4}));
  EXPECT_EQ(prioritiesOf(0), std::vector<int>{});
  EXPECT_FALSE(priorityMask({}).isOk());
  EXPECT_FALSE(priorityMask({8}).isOk());
  EXPECT_FALSE(priorityMask({-1}).isOk());
  EXPECT_NE(priorityMask({9}).status().message().find("9"), std::string::npos);
}

}  // namespace
}  // namespace fabric_chaos::injectors
