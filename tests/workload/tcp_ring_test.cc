#include "workload/sys/tcp_ring.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "core/clock.h"
#include "tests/workload/test_support.h"

namespace fabric_chaos::workload {
namespace {

using core::StatusCode;
using testing::freePorts;

constexpr int64_t kSecondNs = 1'000'000'000;

struct Ring {
  std::vector<std::unique_ptr<TcpRing>> ranks;
};

// Listens for every rank of a loopback ring of `world`.
Ring makeRing(int world, int64_t peer_timeout_ms, const std::atomic<bool>* stop = nullptr,
              std::atomic<bool>* abort_flag_of_rank0 = nullptr) {
  Ring ring;
  auto ports = freePorts(world);
  EXPECT_EQ(static_cast<int>(ports.size()), world);
  for (int r = 0; r < world; ++r) {
    TcpRingOptions o;
    o.rank = r;
    o.world = world;
    o.listen_port = ports[r];
    o.next_port = ports[(r + 1) % world];
    o.peer_timeout_ms = peer_timeout_ms;
    o.stop = stop;
    if (r == 0) o.abort_connections = abort_flag_of_rank0;
    auto listening = TcpRing::listen(o);
    EXPECT_TRUE(listening.isOk()) << listening.status().toString();
    if (!listening.isOk()) return {};
    EXPECT_EQ(listening.value()->listenPort(), ports[r]);
    ring.ranks.push_back(std::move(listening.value()));
  }
  return ring;
}

// Forms the ring with one thread per rank; returns each rank's result.
std::vector<core::Result<uint32_t>> formAll(Ring& ring, std::vector<uint32_t> epochs = {}) {
  const size_t n = ring.ranks.size();
  std::vector<core::Result<uint32_t>> results(n, core::Status(StatusCode::kInternal, "not run"));
  std::vector<std::thread> threads;
  for (size_t r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      results[r] =
          ring.ranks[r]->form(epochs.empty() ? 1 : epochs[r], core::steadyNowNs() + 10 * kSecondNs);
    });
  }
  for (auto& t : threads) t.join();
  return results;
}

// A client that connects to `port` and sends a hello of its choosing.
int rogueConnect(int port, const char* magic, uint32_t rank, uint32_t world) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) return -1;
  uint8_t hello[16];
  std::memcpy(hello, magic, 4);
  uint32_t fields[3] = {htonl(rank), htonl(world), htonl(1)};
  std::memcpy(hello + 4, fields, sizeof(fields));
  if (::send(fd, hello, sizeof(hello), MSG_NOSIGNAL) != static_cast<ssize_t>(sizeof(hello))) {
    ::close(fd);
    return -1;
  }
  return fd;
}

TEST(TcpRingTest, ListenRejectsANameInsteadOfAnAddress) {
  TcpRingOptions o;
  o.world = 2;
  o.next_addr = "localhost";
  o.next_port = 1;
  auto ring = TcpRing::listen(o);
  ASSERT_FALSE(ring.isOk());
  EXPECT_EQ(ring.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(ring.status().message().find("--next"), std::string::npos);
}

TEST(TcpRingTest, ThreeRanksFormAndAgreeOnTheHighestEpoch) {
  Ring ring = makeRing(3, 5000);
  ASSERT_EQ(ring.ranks.size(), 3u);
  auto results = formAll(ring, {4, 7, 5});
  for (int r = 0; r < 3; ++r) {
    ASSERT_TRUE(results[r].isOk()) << "rank " << r << ": " << results[r].status().toString();
    EXPECT_TRUE(ring.ranks[r]->connected());
  }
  // Each rank sees its own epoch and both neighbours'; in a ring of three that is all of them.
  EXPECT_EQ(*results[0], 7u);
  EXPECT_EQ(*results[1], 7u);
  EXPECT_EQ(*results[2], 7u);
}

TEST(TcpRingTest, LargeChunksBothWaysDoNotDeadlock) {
  Ring ring = makeRing(2, 5000);
  ASSERT_EQ(ring.ranks.size(), 2u);
  for (const auto& r : formAll(ring)) ASSERT_TRUE(r.isOk()) << r.status().toString();
  // Far more than the socket buffers hold: a blocking send-then-receive would deadlock here.
  constexpr size_t kBytes = 32 << 20;
  std::vector<std::vector<uint8_t>> send(2, std::vector<uint8_t>(kBytes));
  std::vector<std::vector<uint8_t>> recv(2, std::vector<uint8_t>(kBytes));
  for (size_t i = 0; i < kBytes; ++i) {
    send[0][i] = static_cast<uint8_t>(i * 31);
    send[1][i] = static_cast<uint8_t>(i * 17 + 5);
  }
  std::vector<core::Status> results(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      results[r] = ring.ranks[r]->sendRecv(send[r].data(), kBytes, recv[r].data(), kBytes);
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_TRUE(results[0].isOk()) << results[0].toString();
  ASSERT_TRUE(results[1].isOk()) << results[1].toString();
  EXPECT_TRUE(recv[0] == send[1]);
  EXPECT_TRUE(recv[1] == send[0]);
}

TEST(TcpRingTest, AcceptorRejectsWrongRankOrWorldAndKeepsAccepting) {
  Ring ring = makeRing(2, 5000);
  ASSERT_EQ(ring.ranks.size(), 2u);
  // Rank 1's previous rank is 0 in a world of 2. These arrive before rank 0's connection.
  const int port1 = ring.ranks[1]->listenPort();
  int wrong_rank = rogueConnect(port1, "FCR1", 1, 2);
  int wrong_world = rogueConnect(port1, "FCR1", 0, 3);
  int wrong_magic = rogueConnect(port1, "XXXX", 0, 2);
  ASSERT_GE(wrong_rank, 0);
  ASSERT_GE(wrong_world, 0);
  ASSERT_GE(wrong_magic, 0);
  for (const auto& r : formAll(ring)) ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(ring.ranks[1]->rejectedHandshakes(), 3);
  EXPECT_EQ(ring.ranks[0]->rejectedHandshakes(), 0);
  // The rejected clients were closed without an ack.
  for (int fd : {wrong_rank, wrong_world, wrong_magic}) {
    uint8_t byte = 0;
    ssize_t n = ::recv(fd, &byte, 1, 0);
    EXPECT_TRUE(n == 0 || (n < 0 && errno == ECONNRESET)) << n;
    ::close(fd);
  }
  // And the real ring works.
  uint32_t a = 11, b = 22, got_a = 0, got_b = 0;
  std::thread t([&] { EXPECT_TRUE(ring.ranks[1]->sendRecv(&b, 4, &got_b, 4).isOk()); });
  EXPECT_TRUE(ring.ranks[0]->sendRecv(&a, 4, &got_a, 4).isOk());
  t.join();
  EXPECT_EQ(got_a, 22u);
  EXPECT_EQ(got_b, 11u);
}

TEST(TcpRingTest, FormTimesOutWithoutNeighbours) {
  Ring ring = makeRing(2, 5000);
  ASSERT_EQ(ring.ranks.size(), 2u);
  ring.ranks.pop_back();  // rank 1 is gone: connections to its port are refused
  auto formed = ring.ranks[0]->form(1, core::steadyNowNs() + kSecondNs / 5);
  ASSERT_FALSE(formed.isOk());
  EXPECT_EQ(formed.status().code(), StatusCode::kTimeout);
  EXPECT_NE(formed.status().message().find("connecting to next rank 1"), std::string::npos)
      << formed.status().message();
  EXPECT_NE(formed.status().message().find("refused"), std::string::npos)
      << formed.status().message();
}

TEST(TcpRingTest, StopInterruptsForm) {
  std::atomic<bool> stop{false};
  Ring ring = makeRing(2, 5000, &stop);
  ASSERT_EQ(ring.ranks.size(), 2u);
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    stop = true;
  });
  auto formed = ring.ranks[0]->form(1, core::steadyNowNs() + 60 * kSecondNs);
  stopper.join();
  ASSERT_FALSE(formed.isOk());
  EXPECT_EQ(formed.status().code(), StatusCode::kAborted);
}

TEST(TcpRingTest, ClosedPeerIsSeenAsEndOfStream) {
  Ring ring = makeRing(2, 5000);
  ASSERT_EQ(ring.ranks.size(), 2u);
  for (const auto& r : formAll(ring)) ASSERT_TRUE(r.isOk()) << r.status().toString();
  ring.ranks[1]->disconnect();
  uint32_t out = 1, in = 0;
  core::Status status = ring.ranks[0]->sendRecv(&out, 4, &in, 4);
  ASSERT_FALSE(status.isOk());
  // FIN on the incoming connection, or the RST our send provoked on the outgoing one.
  EXPECT_TRUE((status.code() == StatusCode::kUnavailable && status.origin() == 0) ||
              status.origin() == ECONNRESET || status.origin() == EPIPE)
      << status.toString();
}

TEST(TcpRingTest, SilentPeerTimesOutOnlyAfterThePeerTimeout) {
  Ring ring = makeRing(2, 300);
  ASSERT_EQ(ring.ranks.size(), 2u);
  for (const auto& r : formAll(ring)) ASSERT_TRUE(r.isOk()) << r.status().toString();
  uint32_t out = 1, in = 0;
  const int64_t start = core::steadyNowNs();
  core::Status status = ring.ranks[0]->sendRecv(&out, 4, &in, 4);  // rank 1 never sends
  const int64_t waited = core::steadyNowNs() - start;
  EXPECT_EQ(status.code(), StatusCode::kTimeout) << status.toString();
  EXPECT_GE(waited, 300 * 1'000'000);
}

TEST(TcpRingTest, AbortHookResetsBothConnections) {
  std::atomic<bool> abort_flag{false};
  Ring ring = makeRing(2, 5000, nullptr, &abort_flag);
  ASSERT_EQ(ring.ranks.size(), 2u);
  for (const auto& r : formAll(ring)) ASSERT_TRUE(r.isOk()) << r.status().toString();
  abort_flag = true;
  uint32_t out = 1, in = 0;
  core::Status status = ring.ranks[0]->sendRecv(&out, 4, &in, 4);
  EXPECT_EQ(status.code(), StatusCode::kAborted) << status.toString();
  EXPECT_FALSE(abort_flag.load());
  EXPECT_FALSE(ring.ranks[0]->connected());
  core::Status peer = ring.ranks[1]->sendRecv(&out, 4, &in, 4);
  EXPECT_TRUE(peer.origin() == ECONNRESET || peer.origin() == EPIPE) << peer.toString();
}

TEST(TcpRingTest, ReformsAfterADisconnect) {
  Ring ring = makeRing(3, 5000);
  ASSERT_EQ(ring.ranks.size(), 3u);
  for (const auto& r : formAll(ring)) ASSERT_TRUE(r.isOk()) << r.status().toString();
  for (auto& r : ring.ranks) r->disconnect();
  auto results = formAll(ring, {2, 2, 2});
  for (const auto& r : results) ASSERT_TRUE(r.isOk()) << r.status().toString();
  std::vector<uint32_t> in(3, 0);
  std::vector<core::Status> status(3);
  std::vector<std::thread> threads;
  for (uint32_t r = 0; r < 3; ++r) {
    threads.emplace_back([&, r] {
      uint32_t out = 100 + r;
      status[r] = ring.ranks[r]->sendRecv(&out, 4, &in[r], 4);
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < 3; ++r) ASSERT_TRUE(status[r].isOk()) << status[r].toString();
  EXPECT_EQ(in[0], 102u);  // from rank 2
  EXPECT_EQ(in[1], 100u);
  EXPECT_EQ(in[2], 101u);
}

}  // namespace
}  // namespace fabric_chaos::workload
