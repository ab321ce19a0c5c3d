// The real `fabric-chaos agent` binary (FC_BINARY, set by ctest) on 127.0.0.1 with an ephemeral
// port and a token file: it prints where it listens, answers /agent/v1/info only with the token,
// and exits 0 on SIGTERM. Loopback only; it applies no fault.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "net/http_client.h"

namespace fabric_chaos::agent {
namespace {

using nlohmann::json;

constexpr char kToken[] = "process-test-token-0123456789";

int64_t nowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

class AgentProcess {
 public:
  explicit AgentProcess(std::vector<std::string> args) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(fds[1], 1);
      dup2(fds[1], 2);
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    close(fds[1]);
    fd_ = fds[0];
    reader_ = std::thread([this] {
      char buffer[4096];
      ssize_t n;
      while ((n = read(fd_, buffer, sizeof(buffer))) > 0) {
        std::lock_guard lock(mu_);
        output_.append(buffer, static_cast<size_t>(n));
      }
    });
  }

  ~AgentProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (reader_.joinable()) reader_.join();
    if (fd_ >= 0) close(fd_);
  }

  // The port from "fabric-chaos agent listening on 127.0.0.1:PORT"; 0 if it never says so.
  int waitForPort(int timeout_ms) {
    static const std::regex kListening(R"(fabric-chaos agent listening on 127\.0\.0\.1:(\d+))");
    const int64_t deadline = nowMs() + timeout_ms;
    while (nowMs() < deadline) {
      std::smatch match;
      std::string out = output();
      if (std::regex_search(out, match, kListening)) return std::stoi(match[1]);
      int status;
      if (pid_ > 0 && waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return 0;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return 0;
  }

  // Sends signo and returns the exit code (128+signal when killed), -1 on timeout.
  int signalAndWait(int signo, int timeout_ms) {
    if (pid_ <= 0) return -1;
    ::kill(pid_, signo);
    const int64_t deadline = nowMs() + timeout_ms;
    int status = 0;
    while (waitpid(pid_, &status, WNOHANG) == 0) {
      if (nowMs() > deadline) return -1;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    pid_ = -1;
    if (reader_.joinable()) reader_.join();
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

  std::string output() {
    std::lock_guard lock(mu_);
    return output_;
  }

 private:
  pid_t pid_ = -1;
  int fd_ = -1;
  std::thread reader_;
  std::mutex mu_;
  std::string output_;
};

class AgentBinary : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* binary = std::getenv("FC_BINARY");
    if (binary == nullptr || !std::filesystem::exists(binary)) {
      if (std::getenv("CI") != nullptr) {
        FAIL() << "FC_BINARY must point at the built fabric-chaos binary (ctest sets it)";
      }
      GTEST_SKIP() << "FC_BINARY is not set: run through ctest";
    }
    binary_ = binary;
    std::string pattern = (std::filesystem::temp_directory_path() / "fc_agentproc_XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    std::ofstream(dir_ + "/token") << kToken << "\n";
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }

  std::vector<std::string> args(std::vector<std::string> extra = {}) {
    std::vector<std::string> out{binary_,        "agent",         "--listen",    "127.0.0.1:0",
                                 "--token-file", dir_ + "/token", "--state-dir", dir_ + "/state",
                                 "--allow",      "fc-none0",      "--mgmt-if",   "lo"};
    out.insert(out.end(), extra.begin(), extra.end());
    return out;
  }

  std::string binary_;
  std::string dir_;
};

TEST_F(AgentBinary, ServesInfoOnlyWithTheTokenAndExitsCleanlyOnSigterm) {
  AgentProcess agent(args());
  const int port = agent.waitForPort(15000);
  ASSERT_GT(port, 0) << agent.output();
  net::HttpClient client("http://127.0.0.1:" + std::to_string(port), 5000);

  core::HttpRequest request;
  request.method = "GET";
  request.target = "/agent/v1/info";
  auto anonymous = client.send(request);
  ASSERT_TRUE(anonymous.isOk()) << anonymous.status().toString();
  EXPECT_EQ(anonymous->status, 401);
  EXPECT_NE(anonymous->body.find("UNAUTHENTICATED"), std::string::npos) << anonymous->body;

  request.headers["Authorization"] = "Bearer wrong";
  EXPECT_EQ(client.send(request)->status, 401);

  request.headers["Authorization"] = std::string("Bearer ") + kToken;
  auto info = client.send(request);
  ASSERT_TRUE(info.isOk()) << info.status().toString();
  ASSERT_EQ(info->status, 200) << info->body;
  json doc = json::parse(info->body);
  EXPECT_FALSE(doc["hostname"].get<std::string>().empty());
  EXPECT_FALSE(doc["kernel"].get<std::string>().empty());
  EXPECT_TRUE(doc["capabilities"].is_array());
  EXPECT_TRUE(doc["netdevs"].is_array());
  EXPECT_TRUE(doc["rdma_devices"].is_array());
  EXPECT_EQ(doc["allowed_interfaces"], json({"fc-none0"}));
  EXPECT_EQ(doc["management_interfaces"], json({"lo"}));
  EXPECT_EQ(doc["leases"], 0);
  EXPECT_GT(doc["agent_now_ns"].get<int64_t>(), 0);

  // A fault on the management interface is refused by the real binary too.
  core::HttpRequest apply = request;
  apply.method = "POST";
  apply.target = "/agent/v1/faults";
  apply.body = R"({"fault":{"kind":"link_flap","target":{"ifname":"lo"},"params":{"down_ms":10}}})";
  auto refused = client.send(apply);
  ASSERT_TRUE(refused.isOk());
  EXPECT_EQ(refused->status, 403) << refused->body;

  EXPECT_EQ(agent.signalAndWait(SIGTERM, 15000), 0) << agent.output();
  // The journal was rewritten on the way out, and holds nothing.
  std::ifstream journal(dir_ + "/state/agent-journal.json");
  ASSERT_TRUE(journal.good());
  EXPECT_TRUE(json::parse(journal)["faults"].empty());
}

TEST_F(AgentBinary, RefusesToStartWithoutAToken) {
  AgentProcess agent({binary_, "agent", "--listen", "127.0.0.1:0", "--state-dir", dir_ + "/s"});
  EXPECT_EQ(agent.signalAndWait(0, 15000), 2) << agent.output();
  EXPECT_NE(agent.output().find("--token"), std::string::npos) << agent.output();
}

TEST_F(AgentBinary, HelpDescribesTheOptions) {
  AgentProcess agent({binary_, "agent", "--help"});
  EXPECT_EQ(agent.signalAndWait(0, 15000), 0);
  for (const char* option : {"--listen", "--token-file", "--allow", "--mgmt-if", "--log-dir"}) {
    EXPECT_NE(agent.output().find(option), std::string::npos) << option;
  }
}

}  // namespace
}  // namespace fabric_chaos::agent
