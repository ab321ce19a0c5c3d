// `fabric-chaos agent --register` against the real `fabric-chaos serve` on loopback: with an
// operator token the agent appears in a real fabric under serve's state directory (read from
// the file), GET /v1/fabrics/{name} reaches it at the URL it gave, and a scenario selecting its
// label validates against that fabric; with a viewer token nothing is registered. Applies no
// fault.

#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "agent/registration_client.h"
#include "tests/agent/agent_process.h"
#include "tests/privileged/support.h"

namespace fabric_chaos::agent {
namespace {

using fabric_chaos::testing::httpRequest;
using nlohmann::json;

constexpr char kAgentToken[] = "register-process-test-token-0123456789";

class AgentRegister : public fabric_chaos::testing::BinaryProcessTest {
 protected:
  std::string file(const std::string& name) const { return dir_ + "/" + name; }

  // A token of serve with this role, written to a file.
  std::string tokenFile(const std::string& role) {
    auto reply = httpRequest(port_, "POST", "/v1/tokens",
                             json{{"name", "agents-" + role}, {"role", role}}.dump());
    EXPECT_EQ(reply.status, 201) << reply.body;
    const std::string path = file(role + ".token");
    std::ofstream(path) << reply.json().value("token", "") << "\n";
    return path;
  }

  std::vector<std::string> agentArgs(const std::string& token_file,
                                     const std::string& id = "gpu017") {
    return {binary_,
            "agent",
            "--listen",
            "127.0.0.1:0",
            "--token-file",
            file("agent.token"),
            "--state-dir",
            file("agent-state-" + id),
            "--allow",
            "lo",
            "--mgmt-if",
            "fc-none0",
            "--agent-id",
            id,
            "--register",
            "http://127.0.0.1:" + std::to_string(port_),
            "--register-token-file",
            token_file,
            "--fabric",
            "fleet",
            "--labels",
            "rail=3,rack=r12",
            "--register-interval-ms",
            "300"};
  }

  json fabricFile() {
    std::ifstream in(file("serve/state/fabrics/fleet.json"));
    if (!in) return nullptr;
    return json::parse(in, nullptr, false);
  }

  int port_ = 0;
};

TEST_F(AgentRegister, AnOperatorTokenPutsTheAgentInARealFabricThatServeDrives) {
  std::ofstream(file("agent.token")) << kAgentToken << "\n";
  std::filesystem::create_directories(file("serve"));
  fabric_chaos::testing::ServeProcess serve({"--agent-token-file", file("agent.token")},
                                            file("serve"));
  port_ = serve.waitForPort(60000);
  ASSERT_GT(port_, 0) << serve.output();

  // A viewer may not register: the agent keeps running and says why, and nothing is written.
  {
    AgentProcess viewer(agentArgs(tokenFile("viewer")));
    ASSERT_GT(viewer.waitForPort(60000), 0) << viewer.output();
    ASSERT_TRUE(fabric_chaos::testing::waitFor(
        [&] {
          const std::string said = viewer.output();
          return said.find("cannot register") != std::string::npos &&
                 said.find("HTTP 403") != std::string::npos;
        },
        20000))
        << viewer.output();
    EXPECT_TRUE(fabricFile().is_null());
    EXPECT_EQ(viewer.signalAndWait(SIGTERM, 15000, false), 0) << viewer.output();
  }

  AgentProcess agent(agentArgs(tokenFile("operator")));
  const int agent_port = agent.waitForPort(60000);
  ASSERT_GT(agent_port, 0) << agent.output();
  ASSERT_TRUE(fabric_chaos::testing::waitFor([&] { return fabricFile().is_object(); }, 20000))
      << agent.output();
  const json fabric = fabricFile();
  EXPECT_EQ(fabric["kind"], "real");
  ASSERT_EQ(fabric["hosts"].size(), 1u) << fabric.dump();
  const json& host = fabric["hosts"][0];
  EXPECT_EQ(host["name"], "gpu017");
  EXPECT_EQ(host["agent"], "http://127.0.0.1:" + std::to_string(agent_port));
  EXPECT_EQ(host["agent_token_file"], file("agent.token"));
  EXPECT_EQ(host["labels"]["rail"], "3");
  EXPECT_EQ(host["nics"], json({{{"name", "lo"}, {"address", "127.0.0.1"}}}));
  // The agent logs its success once the answer is back, which may be after serve wrote the file.
  EXPECT_TRUE(fabric_chaos::testing::waitFor(
      [&] { return agent.output().find("registered with http://127.0.0.1:") != std::string::npos; },
      10000))
      << agent.output();

  // serve reaches the agent at the URL it registered, with the fleet's token.
  auto reply = httpRequest(port_, "GET", "/v1/fabrics/fleet");
  ASSERT_EQ(reply.status, 200) << reply.body;
  const json agent_view = reply.json()["hosts"][0]["agent"];
  EXPECT_EQ(agent_view["reachable"], true) << agent_view.dump();

  // A second host joins the same fabric; a scenario on it selects hosts by their label (their
  // host ends: a real fabric's switch ports are not ours).
  AgentProcess second(agentArgs(file("operator.token"), "gpu018"));
  ASSERT_GT(second.waitForPort(60000), 0) << second.output();
  ASSERT_TRUE(fabric_chaos::testing::waitFor(
      [&] { return fabricFile().value("hosts", json::array()).size() == 2; }, 20000))
      << second.output();
  const json scenario = {{"version", 1},
                         {"name", "rail3-flap"},
                         {"steps",
                          {{{"kind", "link_flap"},
                            {"target", {{"labels", {{"rail", "3"}}}, {"side", "host"}}},
                            {"at_ms", 1000},
                            {"params", {{"down_ms", 500}}}}}}};
  auto valid = httpRequest(port_, "POST", "/v1/scenarios/validate",
                           json{{"scenario", scenario}, {"fabric", "fleet"}}.dump());
  EXPECT_EQ(valid.status, 200) << valid.body;
  EXPECT_EQ(valid.json().value("valid", false), true) << valid.body;

  // The same selector's switch side is refused on a real fabric.
  json switch_side = scenario;
  switch_side["steps"][0]["target"].erase("side");
  auto refused = httpRequest(port_, "POST", "/v1/scenarios/validate",
                             json{{"scenario", switch_side}, {"fabric", "fleet"}}.dump());
  EXPECT_EQ(refused.status, 422) << refused.body;
  EXPECT_NE(refused.body.find("is a real fabric"), std::string::npos) << refused.body;

  // The heartbeats keep the fabric as it is: two hosts still.
  std::this_thread::sleep_for(std::chrono::milliseconds(900));
  EXPECT_EQ(fabricFile()["hosts"].size(), 2u);

  EXPECT_EQ(second.signalAndWait(SIGTERM, 15000, false), 0) << second.output();
  EXPECT_EQ(agent.signalAndWait(SIGTERM, 15000, false), 0) << agent.output();
  EXPECT_EQ(serve.stop(30000), 0) << serve.output();
}

TEST(RegistrationNics, TheAllowlistOrEveryAddressedNonManagementInterface) {
  const std::vector<NetdevInfo> devs = {{"lo", "127.0.0.1", "", "UNKNOWN", 65536},
                                        {"eth0", "10.0.0.5", "", "UP", 1500},
                                        {"ens1f0", "192.168.3.17", "", "UP", 9000},
                                        {"ens2f0", "", "", "DOWN", 9000}};
  auto names = [](const std::vector<NetdevInfo>& out) {
    std::vector<std::string> n;
    for (const auto& d : out) n.push_back(d.name);
    return n;
  };
  EXPECT_EQ(names(registrationNics(devs, {}, {"eth0"})), std::vector<std::string>{"ens1f0"});
  EXPECT_EQ(names(registrationNics(devs, {"ens2f0", "ns1/eth1", "eth0"}, {"eth0"})),
            std::vector<std::string>{"ens2f0"});
}

}  // namespace
}  // namespace fabric_chaos::agent
