// The verbs ring's pure parts (QP timeout choice, CM private data, segmentation, credit
// accounting) and what it does on a host without an RDMA device. The data path itself runs in
// the VM tier (tests/vm/verbs_guest_test.cc) over Soft-RoCE.

#include "workload/sys/verbs_ring.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <deque>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "core/clock.h"

namespace fabric_chaos::workload {
namespace {

using core::StatusCode;
using verbs::Handshake;

// ibv_wc_status values (stable libibverbs ABI); the test does not include the verbs headers.
constexpr int kWcSuccess = 0;
constexpr int kWcWrFlushErr = 5;
constexpr int kWcRemAccessErr = 10;
constexpr int kWcRetryExcErr = 12;
constexpr int kWcRnrRetryExcErr = 13;

TEST(VerbsHelpersTest, AckTimeoutLeavesTheRetryBudgetInsideHalfThePeerTimeout) {
  struct Case {
    int64_t peer_timeout_ms;
    uint8_t exponent;
  };
  const Case cases[] = {
      {1, 14},         // below the floor: 67 ms per try anyway
      {300, 14},       //
      {1000, 14},      // 7 * 67.1 = 470 ms <= 500
      {2000, 15},      // 7 * 134.2 = 939 ms <= 1000; 16 would be 1879
      {5000, 16},      // 7 * 268.4 = 1879 ms <= 2500
      {10000, 17},     // the default: 7 * 536.9 = 3758 ms <= 5000
      {86400000, 20},  // capped at 4.3 s per try
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.peer_timeout_ms);
    EXPECT_EQ(verbs::ackTimeoutExponent(c.peer_timeout_ms), c.exponent);
  }
  EXPECT_NEAR(verbs::retryBudgetMs(14), 7 * 67.108864, 1e-6);
  EXPECT_NEAR(verbs::retryBudgetMs(17), 7 * 536.870912, 1e-6);
  // rxe retries forever when retry_cnt is 7.
  EXPECT_LT(verbs::kRetryCount, 7);
  EXPECT_LT(verbs::kRnrRetryCount, 7);
}

TEST(VerbsHelpersTest, HandshakeRoundTripsInBothDirections) {
  Handshake h;
  h.rank = 2;
  h.world = 3;
  h.epoch = 0x01020304;
  h.slots = 4;
  h.slot_bytes = 87384;
  for (bool reply : {false, true}) {
    auto bytes = verbs::encodeHandshake(h, reply);
    ASSERT_EQ(bytes.size(), verbs::kHandshakeBytes);
    EXPECT_EQ(std::string(bytes.begin(), bytes.begin() + 4), reply ? "FCP1" : "FCQ1");
    // Big-endian on the wire.
    EXPECT_EQ(bytes[12], 0x01);
    EXPECT_EQ(bytes[15], 0x04);
    auto back = verbs::decodeHandshake(bytes.data(), bytes.size(), reply);
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(back->rank, 2u);
    EXPECT_EQ(back->world, 3u);
    EXPECT_EQ(back->epoch, 0x01020304u);
    EXPECT_EQ(back->slots, 4u);
    EXPECT_EQ(back->slot_bytes, 87384u);
    // A request is not a reply and the other way round.
    EXPECT_FALSE(verbs::decodeHandshake(bytes.data(), bytes.size(), !reply).has_value());
    // RoCE pads the private data of a CM REQ to 56 bytes: trailing bytes are ignored.
    bytes.resize(56, 0);
    EXPECT_TRUE(verbs::decodeHandshake(bytes.data(), bytes.size(), reply).has_value());
  }
}

TEST(VerbsHelpersTest, HandshakeRejectsMalformedPrivateData) {
  Handshake good;
  good.rank = 1;
  good.world = 2;
  good.epoch = 7;
  good.slots = 4;
  good.slot_bytes = 4096;
  struct Case {
    const char* name;
    void (*mutate)(std::vector<uint8_t>*);
  };
  const Case cases[] = {
      {"empty", [](std::vector<uint8_t>* b) { b->clear(); }},
      {"short", [](std::vector<uint8_t>* b) { b->resize(23); }},
      {"magic", [](std::vector<uint8_t>* b) { (*b)[0] = 'X'; }},
      {"rank >= world", [](std::vector<uint8_t>* b) { (*b)[7] = 2; }},
      {"world 1", [](std::vector<uint8_t>* b) { (*b)[11] = 1; }},
      {"world too big", [](std::vector<uint8_t>* b) { (*b)[8] = 1; }},
      {"no slots", [](std::vector<uint8_t>* b) { (*b)[19] = 0; }},
      {"too many slots", [](std::vector<uint8_t>* b) { (*b)[17] = 0xff; }},
      {"zero slot bytes", [](std::vector<uint8_t>* b) { std::memset(b->data() + 20, 0, 4); }},
      {"huge slot bytes", [](std::vector<uint8_t>* b) { (*b)[20] = 0x10; }},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto bytes = verbs::encodeHandshake(good, false);
    c.mutate(&bytes);
    EXPECT_FALSE(verbs::decodeHandshake(bytes.data(), bytes.size(), false).has_value());
  }
  EXPECT_FALSE(verbs::decodeHandshake(nullptr, 24, false).has_value());
}

TEST(VerbsHelpersTest, ChunksSplitIntoSlotSizedSegments) {
  struct Case {
    size_t bytes;
    size_t slot;
    std::vector<size_t> segments;
  };
  const Case cases[] = {
      {0, 4096, {}},
      {1, 4096, {1}},
      {4096, 4096, {4096}},
      {4097, 4096, {4096, 1}},
      {87384, 87384, {87384}},  // a 256 KiB allreduce over 3 ranks: one message per step
      {87380, 87384, {87380}},  // the shorter chunks fit the slot of the longest
      {10000, 4096, {4096, 4096, 1808}},
      {100, 0, {}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(std::to_string(c.bytes) + "/" + std::to_string(c.slot));
    ASSERT_EQ(verbs::segmentCount(c.bytes, c.slot), c.segments.size());
    size_t total = 0;
    for (size_t i = 0; i < c.segments.size(); ++i) {
      EXPECT_EQ(verbs::segmentBytes(c.bytes, c.slot, i), c.segments[i]) << i;
      total += c.segments[i];
    }
    EXPECT_EQ(total, c.slot == 0 ? 0 : c.bytes);
    EXPECT_EQ(verbs::segmentBytes(c.bytes, c.slot, c.segments.size()), 0u);
  }
}

TEST(VerbsHelpersTest, SendCreditsNeedBothACreditAndAFreeSlot) {
  verbs::SendCredits tx(3, 2);
  EXPECT_TRUE(tx.canSend());
  EXPECT_EQ(tx.take(), 0u);
  EXPECT_EQ(tx.take(), 1u);
  EXPECT_FALSE(tx.canSend()) << "out of credits";
  tx.granted(5);
  EXPECT_EQ(tx.credits(), 5u);
  EXPECT_EQ(tx.take(), 2u);
  EXPECT_FALSE(tx.canSend()) << "credits left, but every send slot is in flight";
  EXPECT_EQ(tx.freeSlots(), 0u);
  tx.sendCompleted();
  ASSERT_TRUE(tx.canSend());
  EXPECT_EQ(tx.take(), 0u) << "slots are reused in order";
}

TEST(VerbsHelpersTest, RecvStreamIsAByteStreamOverSegments) {
  constexpr size_t kSlot = 8;
  std::vector<uint8_t> base(4 * kSlot);
  for (size_t i = 0; i < base.size(); ++i) base[i] = static_cast<uint8_t>(i);
  verbs::RecvStream rx(2);
  rx.arrived(1, 8);  // bytes 8..15
  rx.arrived(3, 5);  // bytes 24..28
  std::vector<uint8_t> dst(16, 0xee);
  std::vector<uint32_t> freed;
  EXPECT_EQ(rx.consume(base.data(), kSlot, dst.data(), 3, &freed), 3u);
  EXPECT_TRUE(freed.empty()) << "slot 1 is only partly consumed";
  EXPECT_EQ(rx.consume(base.data(), kSlot, dst.data() + 3, 13, &freed), 10u);
  EXPECT_EQ(freed, (std::vector<uint32_t>{1, 3}));
  const std::vector<uint8_t> want = {8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28};
  EXPECT_EQ(std::vector<uint8_t>(dst.begin(), dst.begin() + 13), want);
  EXPECT_EQ(rx.queuedSegments(), 0u);

  // Credits are owed once slots are reposted, and batched into at most 2 messages in flight.
  EXPECT_EQ(rx.takeCreditsToSend(), 0u);
  rx.reposted(2);
  EXPECT_EQ(rx.takeCreditsToSend(), 2u);
  rx.reposted(1);
  EXPECT_EQ(rx.takeCreditsToSend(), 1u);
  rx.reposted(1);
  EXPECT_EQ(rx.takeCreditsToSend(), 0u) << "two credit messages already in flight";
  EXPECT_EQ(rx.owed(), 1u);
  rx.creditSendCompleted();
  EXPECT_EQ(rx.takeCreditsToSend(), 1u);
}

// Both sides of one QP with random delivery and consumption order: a message (data or credit)
// must always find a posted receive, and the byte stream must arrive intact. This is the property
// that lets the QPs run with a finite rnr_retry.
TEST(VerbsHelpersTest, CreditFlowNeverOverrunsPostedReceives) {
  for (uint32_t slots : {1u, 2u, 4u, 7u}) {
    for (int seed = 0; seed < 20; ++seed) {
      SCOPED_TRACE("slots " + std::to_string(slots) + " seed " + std::to_string(seed));
      std::mt19937 rng(static_cast<uint32_t>(seed));
      constexpr size_t kSlotBytes = 16;
      // Sender: data slots, zero-byte credit receives.
      verbs::SendCredits tx(slots, slots);
      uint32_t credit_recvs_posted = slots;
      std::deque<uint32_t> credit_msgs_in_flight;  // to the sender
      std::deque<size_t> send_completions;         // not yet polled
      // Receiver: data receives.
      verbs::RecvStream rx(slots);
      uint32_t data_recvs_posted = slots;
      std::deque<uint32_t> free_recv_slots;
      for (uint32_t i = 0; i < slots; ++i) free_recv_slots.push_back(i);
      std::deque<std::pair<uint32_t, std::vector<uint8_t>>> data_in_flight;  // slot = send slot
      std::vector<uint8_t> recv_slots(slots * kSlotBytes);
      std::deque<uint32_t> posted_order(free_recv_slots);  // receives are consumed in order
      size_t credit_send_completions = 0;

      std::vector<uint8_t> stream(3000);
      for (size_t i = 0; i < stream.size(); ++i) stream[i] = static_cast<uint8_t>(rng());
      size_t sent = 0;
      std::vector<uint8_t> received;

      for (int step = 0; step < 200000 && received.size() < stream.size(); ++step) {
        switch (rng() % 6) {
          case 0:  // the sender posts what its credits allow
            while (sent < stream.size() && tx.canSend()) {
              tx.take();
              const size_t len = std::min<size_t>(1 + rng() % kSlotBytes, stream.size() - sent);
              data_in_flight.push_back(
                  {0, std::vector<uint8_t>(stream.begin() + sent, stream.begin() + sent + len)});
              sent += len;
            }
            break;
          case 1:  // a data message lands in the oldest posted receive
            if (!data_in_flight.empty()) {
              ASSERT_GT(data_recvs_posted, 0u) << "RNR: data without a posted receive";
              --data_recvs_posted;
              const uint32_t slot = posted_order.front();
              posted_order.pop_front();
              auto msg = std::move(data_in_flight.front());
              data_in_flight.pop_front();
              std::memcpy(recv_slots.data() + slot * kSlotBytes, msg.second.data(),
                          msg.second.size());
              rx.arrived(slot, msg.second.size());
              send_completions.push_back(1);
            }
            break;
          case 2: {  // the receiver consumes some bytes, reposts and returns credits
            std::vector<uint8_t> dst(1 + rng() % 40);
            std::vector<uint32_t> freed;
            const size_t n =
                rx.consume(recv_slots.data(), kSlotBytes, dst.data(), dst.size(), &freed);
            received.insert(received.end(), dst.begin(), dst.begin() + n);
            for (uint32_t slot : freed) posted_order.push_back(slot);
            data_recvs_posted += static_cast<uint32_t>(freed.size());
            rx.reposted(static_cast<uint32_t>(freed.size()));
            if (uint32_t c = rx.takeCreditsToSend(); c > 0) credit_msgs_in_flight.push_back(c);
            break;
          }
          case 3:  // a credit message lands
            if (!credit_msgs_in_flight.empty()) {
              ASSERT_GT(credit_recvs_posted, 0u) << "RNR: credit without a posted receive";
              --credit_recvs_posted;
              // The sender polls it, adds the credits and reposts the receive at once.
              tx.granted(credit_msgs_in_flight.front());
              credit_msgs_in_flight.pop_front();
              ++credit_recvs_posted;
              ++credit_send_completions;
            }
            break;
          case 4:  // the sender polls its send completions
            while (!send_completions.empty()) {
              send_completions.pop_front();
              tx.sendCompleted();
            }
            break;
          case 5:  // the receiver polls its credit send completions
            while (credit_send_completions > 0) {
              --credit_send_completions;
              rx.creditSendCompleted();
            }
            break;
        }
        ASSERT_LE(data_in_flight.size(), data_recvs_posted) << "more in flight than posted";
        ASSERT_LE(credit_msgs_in_flight.size(), credit_recvs_posted);
      }
      ASSERT_EQ(received.size(), stream.size());
      EXPECT_EQ(received, stream);
    }
  }
}

TEST(VerbsHelpersTest, WcStatusesMapToPeerLostReasons) {
  EXPECT_STREQ(verbs::reasonForWcStatus(kWcSuccess), "");
  EXPECT_STREQ(verbs::reasonForWcStatus(kWcRetryExcErr), "timeout");
  EXPECT_STREQ(verbs::reasonForWcStatus(kWcRnrRetryExcErr), "timeout");
  EXPECT_STREQ(verbs::reasonForWcStatus(kWcWrFlushErr), "error");
  EXPECT_STREQ(verbs::reasonForWcStatus(kWcRemAccessErr), "error");
}

bool hostHasRdmaDevice(std::string* names) {
  std::error_code ec;
  bool any = false;
  for (const auto& entry : std::filesystem::directory_iterator("/sys/class/infiniband", ec)) {
    *names += entry.path().filename().string() + " ";
    any = true;
  }
  return any;
}

TEST(VerbsRingTest, ListenWithoutAnRdmaDeviceFailsFastAndSaysSo) {
  std::string names;
  if (hostHasRdmaDevice(&names)) GTEST_SKIP() << "this host has RDMA devices: " << names;
  VerbsRingOptions options;
  options.rank = 0;
  options.world = 2;
  options.listen_port = 7000;
  options.next_port = 7001;
  const int64_t t0 = core::steadyNowNs();
  auto ring = VerbsRing::listen(options);
  const int64_t elapsed_ms = (core::steadyNowNs() - t0) / 1'000'000;
  ASSERT_FALSE(ring.isOk());
  EXPECT_EQ(ring.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(ring.status().message().rfind("no RDMA device: ", 0), 0u) << ring.status().toString();
  EXPECT_NE(ring.status().message().find("rdma link add"), std::string::npos);
  EXPECT_LT(elapsed_ms, 1000);
}

TEST(VerbsRingTest, ListenRejectsBadOptionsBeforeTouchingDevices) {
  VerbsRingOptions options;
  options.world = 1;
  EXPECT_EQ(VerbsRing::listen(options).status().code(), StatusCode::kInvalidArgument);
  options.world = 2;
  options.next_addr = "not-an-address";
  auto bad = VerbsRing::listen(options);
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("--next"), std::string::npos);
}

}  // namespace
}  // namespace fabric_chaos::workload
