// The real `fabric-chaos agent` binary (FC_BINARY, set by ctest) on 127.0.0.1 with an ephemeral
// port and a token file: it prints where it listens, answers /agent/v1/info only with the token,
// and exits 0 on SIGTERM. Loopback only; it applies no fault.

#include "tests/agent/agent_process.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "net/http_client.h"
#include "tests/privileged/support.h"

namespace fabric_chaos::agent {
namespace {

using nlohmann::json;

constexpr char kToken[] = "process-test-token-0123456789";

class AgentBinary : public fabric_chaos::testing::BinaryProcessTest {
 protected:
  void SetUp() override {
    BinaryProcessTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    std::ofstream(dir_ + "/token") << kToken << "\n";
  }

  std::vector<std::string> args(std::vector<std::string> extra = {}) {
    std::vector<std::string> out{binary_,        "agent",         "--listen",    "127.0.0.1:0",
                                 "--token-file", dir_ + "/token", "--state-dir", dir_ + "/state",
                                 "--allow",      "fc-none0",      "--mgmt-if",   "lo"};
    out.insert(out.end(), extra.begin(), extra.end());
    return out;
  }
};

TEST_F(AgentBinary, ServesInfoOnlyWithTheTokenAndExitsCleanlyOnSigterm) {
  AgentProcess agent(args());
  // A liveness bound, not a speed claim: under ASan, with the fuzz targets building beside the
  // unit tier, the agent's start (kernel probes included) once took over 15 s in CI.
  const int port = agent.waitForPort(60000);
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
