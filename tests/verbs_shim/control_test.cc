// The verbs shim's control channel: the request lines (pure), and the server on a real UNIX
// socket in a temporary directory, driven as the agent will drive it: arm, status, renew, disarm,
// a refused line that leaves the connection usable, a lease that runs out, and a server that
// goes away leaving nothing armed and no socket behind.

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <thread>

#include "verbs_shim/control_protocol.h"
#include "verbs_shim/sys/control_server.h"

namespace fabric_chaos::verbs_shim {
namespace {

using nlohmann::json;

TEST(ControlProtocol, ReadsTheFourRequests) {
  auto arm = parseControlRequest(
      R"({"arm": [{"kind": "cqe_error", "status": "wr_flush_err"}], "lease_ms": 2000, "seed": 9})");
  ASSERT_TRUE(arm.isOk()) << arm.status().message();
  const auto& request = std::get<ArmRequest>(*arm);
  ASSERT_EQ(request.faults.size(), 1u);
  EXPECT_EQ(request.faults[0].status, 5);
  EXPECT_EQ(request.lease_ms, 2000);
  EXPECT_EQ(request.seed, 9u);
  EXPECT_TRUE(std::holds_alternative<RenewRequest>(*parseControlRequest(R"({"renew": true})")));
  EXPECT_TRUE(std::holds_alternative<DisarmRequest>(*parseControlRequest(R"({"disarm": true})")));
  EXPECT_TRUE(std::holds_alternative<StatusRequest>(*parseControlRequest(R"({"status": true})")));
}

TEST(ControlProtocol, RefusalsNameWhatIsWrong) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"not json", "a request is one JSON object"},
      {"{}", "a request is one JSON object"},
      {R"({"arm": []})", "arm: must be a non-empty array of faults"},
      {R"({"arm": [{"kind": "cqe_error"}, {"kind": "cqe_error", "trigger": {"probability": 2}}]})",
       "arm[1].trigger.probability: must be a number from 0 to 1"},
      {R"({"arm": [{"kind": "cqe_error"}], "lease_ms": 10})",
       "lease_ms: must be an integer from 100 to 600000"},
      {R"({"arm": [{"kind": "cqe_error"}], "owner": "me"})", "owner: unknown field"},
      {R"({"explode": true})", "explode: unknown request"},
      {R"({"renew": false})", "a request is {\"arm\": [...]}"},
      {R"({"renew": true, "disarm": true})", "a request is {\"arm\": [...]}"},
  };
  for (const auto& [line, says] : cases) {
    auto request = parseControlRequest(line);
    ASSERT_FALSE(request.isOk()) << line;
    EXPECT_NE(request.status().message().find(says), std::string::npos)
        << line << ": " << request.status().message();
  }
}

class RecordingHandler : public ControlHandler {
 public:
  void arm(const ArmRequest& request) override {
    std::lock_guard<std::mutex> lock(mutex);
    armed_faults = request.faults.size();
    ++arms;
  }
  void disarm() override {
    std::lock_guard<std::mutex> lock(mutex);
    armed_faults = 0;
    ++disarms;
  }
  json statusMembers() override {
    std::lock_guard<std::mutex> lock(mutex);
    return {{"comm", "fake"}, {"armed", {{"faults", armed_faults}}}};
  }
  std::mutex mutex;
  size_t armed_faults = 0;
  std::atomic<int> arms{0};
  std::atomic<int> disarms{0};
};

class ControlChannel : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/fc-shim-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    auto server = ControlServer::start(dir_, handler_);
    ASSERT_TRUE(server.isOk()) << server.status().message();
    server_ = std::move(*server);
  }
  void TearDown() override {
    if (fd_ >= 0) close(fd_);
    server_.reset();
    std::filesystem::remove_all(dir_);
  }
  void connectClient() {
    fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, server_->path().c_str(), sizeof(address.sun_path) - 1);
    ASSERT_EQ(connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0)
        << std::strerror(errno);
  }
  json ask(const std::string& line) {
    const std::string out = line + "\n";
    EXPECT_EQ(send(fd_, out.data(), out.size(), MSG_NOSIGNAL), static_cast<ssize_t>(out.size()));
    std::string answer;
    char c = 0;
    while (recv(fd_, &c, 1, 0) == 1 && c != '\n') answer.push_back(c);
    return json::parse(answer, nullptr, false);
  }
  // Until `condition`, for at most 5 s (a wait, not a timing assertion).
  static bool eventually(const std::function<bool()>& condition) {
    for (int i = 0; i < 500 && !condition(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return condition();
  }

  std::string dir_;
  RecordingHandler handler_;
  std::unique_ptr<ControlServer> server_;
  int fd_ = -1;
};

TEST_F(ControlChannel, ArmStatusRenewDisarmOverTheSocket) {
  EXPECT_EQ(server_->path(), controlSocketPath(dir_, getpid()));
  struct stat info {};
  ASSERT_EQ(stat(server_->path().c_str(), &info), 0);
  EXPECT_TRUE(S_ISSOCK(info.st_mode));
  EXPECT_EQ(info.st_mode & 0777, 0600u) << "only the agent's user may arm it";
  connectClient();
  EXPECT_EQ(ask(R"({"renew": true})")["ok"], false) << "nothing to renew yet";
  const json armed =
      ask(R"({"arm": [{"kind": "cqe_error"}, {"kind": "post_send_fail"}], "lease_ms": 60000})");
  EXPECT_EQ(armed, (json{{"ok", true}, {"armed", 2}, {"lease_ms", 60000}}));
  EXPECT_EQ(handler_.arms, 1);
  const json status = ask(R"({"status": true})");
  EXPECT_EQ(status["ok"], true);
  EXPECT_EQ(status["pid"], getpid());
  EXPECT_EQ(status["armed"]["faults"], 2);
  EXPECT_EQ(status["comm"], "fake");
  EXPECT_EQ(ask(R"({"renew": true})"), (json{{"ok", true}, {"lease_ms", 60000}}));
  // A refused line is answered and the connection stays usable.
  const json refused = ask(R"({"arm": [{"kind": "melt"}]})");
  EXPECT_EQ(refused["ok"], false);
  EXPECT_NE(refused["error"].get<std::string>().find("arm[0].kind"), std::string::npos);
  EXPECT_EQ(ask(R"({"disarm": true})"), (json{{"ok", true}}));
  EXPECT_EQ(handler_.disarms, 1);
  EXPECT_EQ(ask(R"({"status": true})")["armed"]["faults"], 0);
}

TEST_F(ControlChannel, ALeaseThatRunsOutDisarms) {
  connectClient();
  ASSERT_EQ(ask(R"({"arm": [{"kind": "cqe_error"}], "lease_ms": 150})")["ok"], true);
  close(fd_);  // the agent is gone
  fd_ = -1;
  EXPECT_TRUE(eventually([&] { return handler_.disarms.load() == 1; }))
      << "still armed after the lease";
  connectClient();
  EXPECT_EQ(ask(R"({"renew": true})")["ok"], false);
}

TEST_F(ControlChannel, AServerThatStopsDisarmsAndRemovesItsSocket) {
  connectClient();
  ASSERT_EQ(ask(R"({"arm": [{"kind": "cqe_error"}], "lease_ms": 60000})")["ok"], true);
  const std::string path = server_->path();
  server_.reset();
  EXPECT_EQ(handler_.disarms, 1);
  EXPECT_FALSE(std::filesystem::exists(path));
  // The agent's end sees the connection closed, not a hang.
  char c = 0;
  EXPECT_EQ(recv(fd_, &c, 1, 0), 0);
}

}  // namespace
}  // namespace fabric_chaos::verbs_shim
