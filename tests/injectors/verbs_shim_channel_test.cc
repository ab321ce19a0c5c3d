// The agent's end of the verbs shims' control channels (injectors/sys/verbs_shim_channel.h)
// against the shim's real control server (verbs_shim/sys/control_server.h) on UNIX sockets in a
// temporary directory: list, arm, renew and disarm; the shim's refusals; a stale socket of a
// program that died is removed; and a program that never answers costs the deadline, not a hang.
// No root, no RDMA device.

#include "injectors/sys/verbs_shim_channel.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "core/unique_fd.h"
#include "verbs_shim/sys/control_server.h"

namespace fabric_chaos::sys {
namespace {

using core::StatusCode;
using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::steady_clock;

// What a shim-loaded program's handler would do, recorded.
class RecordingHandler : public verbs_shim::ControlHandler {
 public:
  void arm(const verbs_shim::ArmRequest& request) override {
    std::lock_guard lock(mu);
    last_arm = request;
    ++arms;
  }
  void disarm() override {
    std::lock_guard lock(mu);
    last_arm.reset();
    ++disarms;
  }
  json statusMembers() override {
    std::lock_guard lock(mu);
    json armed = json::array();
    if (last_arm) {
      for (const auto& fault : last_arm->faults) {
        armed.push_back({{"kind", verbs_shim::describe(fault.kind)}, {"seen", 4}, {"fired", 1}});
      }
    }
    return {{"comm", "ib_write_bw"}, {"rank", 3}, {"devices", {"rxe0"}}, {"armed", armed}};
  }
  std::mutex mu;
  std::optional<verbs_shim::ArmRequest> last_arm;
  int arms = 0;
  int disarms = 0;
};

// A UNIX socket bound at `path`: listening (a program that never accepts) or closed at once,
// leaving the file behind (a program killed before its shim could remove it).
core::UniqueFd bindSocket(const std::string& path, bool listening) {
  core::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path.c_str(), sizeof(address.sun_path) - 1);
  EXPECT_EQ(::bind(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0)
      << path << ": " << std::strerror(errno);
  if (listening) {
    EXPECT_EQ(::listen(fd.get(), 4), 0);
  } else {
    fd.reset();
  }
  return fd;
}

// A pid that no process has: a child that has exited and been reaped.
pid_t deadPid() {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  int status = 0;
  ::waitpid(child, &status, 0);
  return child;
}

verbs_shim::ShimFault cqeError() {
  verbs_shim::ShimFault fault;
  fault.kind = verbs_shim::ShimFaultKind::kCqeError;
  fault.status = 5;
  fault.filter.qp_num = 77;
  fault.trigger.count = 1;
  return fault;
}

class VerbsShimChannelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/fc-verbs-channel-XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    dir_ = dir;
    channel_ = makeVerbsShimChannel(dir_);
  }
  void TearDown() override {
    server_.reset();
    std::filesystem::remove_all(dir_);
  }
  void startServer() {
    auto server = verbs_shim::ControlServer::start(dir_, handler_);
    ASSERT_TRUE(server.isOk()) << server.status().toString();
    server_ = std::move(*server);
  }

  std::string dir_;
  RecordingHandler handler_;
  std::unique_ptr<verbs_shim::ControlServer> server_;
  std::unique_ptr<VerbsShimChannel> channel_;
};

TEST_F(VerbsShimChannelTest, ListsArmsRenewsAndDisarmsARealShim) {
  startServer();
  auto listed = channel_->list();
  ASSERT_TRUE(listed.isOk()) << listed.status().toString();
  ASSERT_EQ(listed->size(), 1u);
  const ShimProcess& shim = (*listed)[0];
  EXPECT_EQ(shim.pid, ::getpid());
  EXPECT_EQ(shim.comm, "ib_write_bw");
  EXPECT_EQ(shim.rank, 3);
  EXPECT_EQ(shim.devices, (std::vector<std::string>{"rxe0"}));
  EXPECT_EQ(shim.armed, json::array());
  EXPECT_EQ(shim.socket, server_->path());
  EXPECT_EQ(channel_->directory(), dir_);

  const verbs_shim::ArmRequest request{{cqeError()}, 60000, 12345};
  ASSERT_TRUE(channel_->arm(::getpid(), request).isOk());
  {
    std::lock_guard lock(handler_.mu);
    ASSERT_TRUE(handler_.last_arm.has_value());
    ASSERT_EQ(handler_.last_arm->faults.size(), 1u);
    EXPECT_EQ(verbs_shim::toJson(handler_.last_arm->faults[0]), verbs_shim::toJson(cqeError()));
    EXPECT_EQ(handler_.last_arm->lease_ms, 60000);
    EXPECT_EQ(handler_.last_arm->seed, 12345u);
  }
  auto armed = channel_->list();
  ASSERT_TRUE(armed.isOk());
  ASSERT_EQ(armed->size(), 1u);
  EXPECT_EQ((*armed)[0].armed, (json{{{"kind", "cqe_error"}, {"seen", 4}, {"fired", 1}}}));

  EXPECT_TRUE(channel_->renew(::getpid()).isOk());
  EXPECT_TRUE(channel_->disarm(::getpid()).isOk());
  EXPECT_EQ(handler_.disarms, 1);
  // Nothing armed any more: the shim refuses to renew, and says why.
  const core::Status renew = channel_->renew(::getpid());
  EXPECT_EQ(renew.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(renew.message().find("nothing is armed"), std::string::npos) << renew.message();
  EXPECT_NE(renew.message().find(std::to_string(::getpid())), std::string::npos)
      << "names the pid: " << renew.message();
  // Disarming twice is fine (revert is idempotent).
  EXPECT_TRUE(channel_->disarm(::getpid()).isOk());
}

TEST_F(VerbsShimChannelTest, TheShimsRefusalIsAFailedPreconditionWithItsReason) {
  startServer();
  const verbs_shim::ArmRequest too_short{{cqeError()}, 10, 1};
  const core::Status refused = channel_->arm(::getpid(), too_short);
  EXPECT_EQ(refused.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.message().find("lease_ms: must be an integer from 100 to 600000"),
            std::string::npos)
      << refused.message();
  EXPECT_EQ(handler_.arms, 0);
}

TEST_F(VerbsShimChannelTest, AStaleSocketOfAProgramThatDiedIsRemoved) {
  startServer();
  const pid_t dead = deadPid();
  const std::string stale = verbs_shim::controlSocketPath(dir_, dead);
  bindSocket(stale, false);
  ASSERT_TRUE(std::filesystem::exists(stale));
  auto listed = channel_->list();
  ASSERT_TRUE(listed.isOk()) << listed.status().toString();
  ASSERT_EQ(listed->size(), 1u) << "only the live shim";
  EXPECT_EQ((*listed)[0].pid, ::getpid());
  EXPECT_FALSE(std::filesystem::exists(stale)) << "removed";

  // Asked directly, the same: the program is gone (kNotFound), and so is its socket.
  const pid_t dead_too = deadPid();
  bindSocket(verbs_shim::controlSocketPath(dir_, dead_too), false);
  EXPECT_EQ(channel_->disarm(dead_too).code(), StatusCode::kNotFound);
  EXPECT_FALSE(std::filesystem::exists(verbs_shim::controlSocketPath(dir_, dead_too)));
  // No socket at all: gone as well.
  EXPECT_EQ(channel_->renew(deadPid()).code(), StatusCode::kNotFound);

  // A refusing socket whose pid lives is not ours to remove (another pid namespace's program).
  const std::string alive = verbs_shim::controlSocketPath(dir_, ::getppid());
  bindSocket(alive, false);
  const core::Status refused = channel_->renew(::getppid());
  EXPECT_EQ(refused.code(), StatusCode::kUnavailable);
  EXPECT_NE(refused.message().find(alive), std::string::npos) << refused.message();
  EXPECT_TRUE(std::filesystem::exists(alive));
}

TEST_F(VerbsShimChannelTest, AProgramThatNeverAnswersCostsTheDeadlineNotAHang) {
  startServer();
  // Listening, never accepting, never reading: connect and send succeed, the answer never comes.
  const core::UniqueFd stuck = bindSocket(verbs_shim::controlSocketPath(dir_, ::getppid()), true);
  auto start = steady_clock::now();
  const core::Status renew = channel_->renew(::getppid());
  auto took = steady_clock::now() - start;
  EXPECT_EQ(renew.code(), StatusCode::kTimeout);
  EXPECT_NE(renew.message().find("did not answer within 1000 ms"), std::string::npos)
      << renew.message();
  EXPECT_GE(took, milliseconds(900));
  EXPECT_LT(took, milliseconds(2500));

  // The list leaves it out and still shows the shim that answers.
  start = steady_clock::now();
  auto listed = channel_->list();
  took = steady_clock::now() - start;
  ASSERT_TRUE(listed.isOk());
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].pid, ::getpid());
  EXPECT_LT(took, milliseconds(2500));

  // The deadline is the channel's.
  auto quick = makeVerbsShimChannel(dir_, 200);
  start = steady_clock::now();
  EXPECT_EQ(quick->disarm(::getppid()).code(), StatusCode::kTimeout);
  EXPECT_LT(steady_clock::now() - start, milliseconds(900));
}

TEST_F(VerbsShimChannelTest, AnAnswerThatIsNoControlAnswerIsUnavailable) {
  const core::UniqueFd server = bindSocket(verbs_shim::controlSocketPath(dir_, ::getppid()), true);
  std::thread peer([&] {
    core::UniqueFd client(::accept(server.get(), nullptr, nullptr));
    char buffer[256];
    (void)::recv(client.get(), buffer, sizeof(buffer), 0);
    const std::string garbage = "hello\n";
    (void)::send(client.get(), garbage.data(), garbage.size(), MSG_NOSIGNAL);
  });
  const core::Status status = channel_->renew(::getppid());
  peer.join();
  EXPECT_EQ(status.code(), StatusCode::kUnavailable);
  EXPECT_NE(status.message().find("answered something that is not a control answer: hello"),
            std::string::npos)
      << status.message();
}

TEST_F(VerbsShimChannelTest, OnlyShimSocketsCountAndAMissingDirectoryIsEmpty) {
  std::ofstream(dir_ + "/notes.txt") << "x";
  std::ofstream(dir_ + "/verbs-12x.sock") << "x";
  std::ofstream(dir_ + "/verbs-.sock") << "x";
  auto listed = channel_->list();
  ASSERT_TRUE(listed.isOk()) << listed.status().toString();
  EXPECT_TRUE(listed->empty());
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/verbs-12x.sock")) << "not ours to remove";

  auto nowhere = makeVerbsShimChannel(dir_ + "/missing");
  auto none = nowhere->list();
  ASSERT_TRUE(none.isOk()) << none.status().toString();
  EXPECT_TRUE(none->empty());
}

TEST(ArmRequestLine, IsWhatTheShimReads) {
  const verbs_shim::ArmRequest request{{cqeError()}, 5000, (uint64_t{1} << 62) + 7};
  const std::string line = armRequestLine(request);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  auto parsed = verbs_shim::parseControlRequest(line);
  ASSERT_TRUE(parsed.isOk()) << parsed.status().toString();
  const auto& arm = std::get<verbs_shim::ArmRequest>(*parsed);
  ASSERT_EQ(arm.faults.size(), 1u);
  EXPECT_EQ(verbs_shim::toJson(arm.faults[0]), verbs_shim::toJson(cqeError()));
  EXPECT_EQ(arm.lease_ms, 5000);
  EXPECT_EQ(arm.seed, request.seed);
}

}  // namespace
}  // namespace fabric_chaos::sys
