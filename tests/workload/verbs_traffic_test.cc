// The verbs traffic transport on a host without RDMA devices (the unit tier's): the CM handshake's
// encoding and its bounds, the source's window, and the fail-fast path when there is no device.
// The transport itself is proven inside a VM with Soft-RoCE (tests/vm/verbs_traffic_guest_test).

#include "workload/sys/verbs_traffic.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace fabric_chaos::workload {
namespace {

using core::StatusCode;

TEST(VerbsTrafficHandshake, RequestAndReplyRoundTrip) {
  const auto request = verbs::encodeTrafficRequest({131072, 16});
  ASSERT_EQ(request.size(), verbs::kTrafficRequestBytes);
  EXPECT_EQ(std::string(request.begin(), request.begin() + 4), "FCT1");
  auto decoded = verbs::decodeTrafficRequest(request.data(), request.size(), 1 << 24);
  ASSERT_TRUE(decoded.has_value());
  EXPECT_EQ(decoded->message_bytes, 131072u);
  EXPECT_EQ(decoded->depth, 16u);

  const auto reply = verbs::encodeTrafficReply({0x00007f12'3456'7000ull, 0xabcd1234u, 32});
  ASSERT_EQ(reply.size(), verbs::kTrafficReplyBytes);
  auto back = verbs::decodeTrafficReply(reply.data(), reply.size());
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->addr, 0x00007f12'3456'7000ull) << "both halves of the 64-bit address";
  EXPECT_EQ(back->rkey, 0xabcd1234u);
  EXPECT_EQ(back->receives, 32u);

  // The transport may pad the private data: the extra bytes are ignored.
  auto padded = request;
  padded.resize(56, 0);
  EXPECT_TRUE(verbs::decodeTrafficRequest(padded.data(), padded.size(), 1 << 24).has_value());
}

TEST(VerbsTrafficHandshake, OutOfRangeOrForeignDataIsRefused) {
  auto bad_request = [](uint32_t message_bytes, uint32_t depth, uint32_t max) {
    const auto data = verbs::encodeTrafficRequest({message_bytes, depth});
    return !verbs::decodeTrafficRequest(data.data(), data.size(), max).has_value();
  };
  EXPECT_TRUE(bad_request(0, 16, 1 << 24));
  EXPECT_TRUE(bad_request((1 << 24) + 1, 16, 1 << 24)) << "over the sink's largest buffer";
  EXPECT_TRUE(bad_request(4096, 0, 1 << 24));
  EXPECT_TRUE(bad_request(4096, verbs::kMaxTrafficDepth + 1, 1 << 24));
  EXPECT_FALSE(bad_request(1 << 24, verbs::kMaxTrafficDepth, 1 << 24));

  auto request = verbs::encodeTrafficRequest({4096, 4});
  EXPECT_FALSE(verbs::decodeTrafficRequest(request.data(), request.size() - 1, 1 << 24));
  request[3] = '2';
  EXPECT_FALSE(verbs::decodeTrafficRequest(request.data(), request.size(), 1 << 24));
  // The ring's handshake is not a traffic one, and the other way round.
  const auto reply = verbs::encodeTrafficReply({1, 2, 3});
  EXPECT_FALSE(verbs::decodeTrafficRequest(reply.data(), reply.size(), 1 << 24));
  const auto no_receives = verbs::encodeTrafficReply({1, 2, 0});
  EXPECT_FALSE(verbs::decodeTrafficReply(no_receives.data(), no_receives.size()));
  EXPECT_FALSE(verbs::decodeTrafficReply(nullptr, 0));
}

TEST(VerbsTrafficHandshake, TheWindowIsTheDepthUnlessTheSinkPostedFewerReceives) {
  EXPECT_EQ(verbs::sourceWindow(16, 32), 16u);
  EXPECT_EQ(verbs::sourceWindow(16, 8), 8u);
  EXPECT_EQ(verbs::sourceWindow(1, 1), 1u);
}

bool hostHasRdmaDevice() {
  std::error_code ec;
  return std::filesystem::directory_iterator("/sys/class/infiniband", ec) !=
         std::filesystem::directory_iterator();
}

TEST(VerbsTrafficNoDevice, BothEndsSayThereIsNoRdmaDevice) {
  if (hostHasRdmaDevice()) GTEST_SKIP() << "this host has an RDMA device";
  auto sink = VerbsTrafficSink::listen("127.0.0.1", 7799, 1 << 20);
  ASSERT_FALSE(sink.isOk());
  EXPECT_EQ(sink.status().code(), StatusCode::kNotFound);
  EXPECT_NE(sink.status().message().find("no RDMA device"), std::string::npos)
      << sink.status().message();
  VerbsSourceOptions options;
  options.addr = "127.0.0.1";
  options.port = 7799;
  auto source = VerbsTrafficSource::create(options);
  ASSERT_FALSE(source.isOk());
  EXPECT_EQ(source.status().code(), StatusCode::kNotFound);
}

TEST(VerbsTrafficNoDevice, BadOptionsAreRefusedBeforeAnyDeviceIsLookedFor) {
  VerbsSourceOptions options;
  options.addr = "not-an-address";
  options.port = 7799;
  EXPECT_EQ(VerbsTrafficSource::create(options).status().code(), StatusCode::kInvalidArgument);
  options.addr = "127.0.0.1";
  options.depth = 0;
  EXPECT_EQ(VerbsTrafficSource::create(options).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(VerbsTrafficSink::listen("nowhere", 1, 1).status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace fabric_chaos::workload
