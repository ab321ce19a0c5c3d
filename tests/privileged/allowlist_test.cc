// The embedded agent's blast radius on a real lab, checked with independent tools (`ip`, `tc`,
// `nft`) byte for byte:
// - in process, serve's guard (app/local_stack.h, allowlist read from the lab's registered fabric)
//   over the real netlink/nftables adapters refuses link_flap and packet_loss on a veth pair in a
//   namespace that is not part of any fabric, and leaves it untouched; the same agent does fault a
//   lab port (so it is the guard that refused, not a broken adapter);
// - through serve's REST API, a fabric that names the initial namespace's `lo` (so `lo` is on the
//   allowlist) still gets its fault refused: `lo` carries serve's own connections. The run ends in
//   `error` naming the interface and nothing changed in the initial namespace.
// A registered fabric's interfaces are on the allowlist by construction, so a selector cannot name
// an off-list interface through the API: the first case goes through the agent directly.

#include <gtest/gtest.h>

#include <fstream>

#include "app/local_stack.h"
#include "lab/fabric_catalog.h"
#include "tests/privileged/support.h"

namespace fabric_chaos::testing {
namespace {

using nlohmann::json;

constexpr const char* kExtraNs = "fcl-extra";

// Links, qdiscs and nft ruleset of a namespace; for the initial namespace only `lo`'s link and
// qdiscs (other tests may add and move veths there meanwhile) and the whole ruleset.
std::string state(const std::string& netns) {
  const std::string in = netns.empty() ? "" : "ip netns exec " + netns + " ";
  const std::string dev = netns.empty() ? " dev lo" : "";
  return runShell(in + "ip -o link show" + dev + " 2>&1").out + "\n--\n" +
         runShell(in + "tc qdisc show" + dev + " 2>&1").out + "\n--\n" +
         runShell(in + "nft list ruleset 2>&1").out;
}

class AllowlistTest : public OwnLabTest {
 protected:
  void SetUp() override {
    OwnLabTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    // A namespace this project creates, holding a veth pair, in no fabric.
    auto extra = runShell(std::string("set -e; ip netns add ") + kExtraNs + "; ip -n " + kExtraNs +
                          " link add vx0 type veth peer name vx1; ip -n " + kExtraNs +
                          " link set vx0 up; ip -n " + kExtraNs + " link set vx1 up 2>&1");
    ASSERT_EQ(extra.exit_code, 0) << extra.out;
  }

  void TearDown() override {
    runShell(std::string("ip netns del ") + kExtraNs + " 2>/dev/null");
    OwnLabTest::TearDown();
  }
};

TEST_F(AllowlistTest, TheEmbeddedAgentRefusesAnInterfaceInNoFabricAndChangesNothing) {
  lab::DirectoryFabricCatalog catalog(dir_ + "/state");
  ASSERT_FALSE(catalog.list().empty()) << "lab up registered no fabric";
  app::LocalStack stack(binary_, dir_ + "/logs",
                        app::makeServeTargetGuard(catalog, {"127.0.0.1", {}, false}));
  agent::LocalAgent& agent = stack.local_agent;

  const std::string before = state(kExtraNs);
  const std::vector<injectors::Fault> faults{
      {"link_flap", injectors::InterfaceTarget{kExtraNs, "vx0"}, {{"down_ms", 1000}}},
      {"packet_loss",
       injectors::InterfaceTarget{kExtraNs, "vx1"},
       {{"percent", 50}, {"direction", "egress"}}},
  };
  for (const auto& fault : faults) {
    auto prior = agent.captureFault(fault);
    ASSERT_FALSE(prior.isOk()) << fault.kind;
    EXPECT_EQ(prior.status().code(), core::StatusCode::kPermissionDenied);
    core::Status applied = agent.applyFault(fault);
    EXPECT_EQ(applied.code(), core::StatusCode::kPermissionDenied) << applied.toString();
    const std::string name = injectors::describe(fault.target);
    EXPECT_NE(applied.message().find("fault target " + name + " is not on this agent's allowlist"),
              std::string::npos)
        << applied.message();
    EXPECT_NE(applied.message().find("fcl-sw0/p0"), std::string::npos) << applied.message();
    EXPECT_NE(applied.message().find("--allow-interface"), std::string::npos);
  }
  EXPECT_EQ(state(kExtraNs), before);

  // The guard and nothing else refused: a lab port on the list is really faulted and restored.
  const injectors::Fault lab_port{
      "link_flap", injectors::InterfaceTarget{"fcl-sw0", "p0"}, {{"down_ms", 1000}}};
  auto prior = agent.captureFault(lab_port);
  ASSERT_TRUE(prior.isOk()) << prior.status().toString();
  ASSERT_TRUE(agent.applyFault(lab_port).isOk());
  EXPECT_FALSE(adminUp("fcl-sw0", "p0"));
  ASSERT_TRUE(agent.revertFault(lab_port, *prior).isOk());
  EXPECT_TRUE(adminUp("fcl-sw0", "p0"));

  // --allow-interface puts it on the list.
  app::LocalStack allowed(
      binary_, dir_ + "/logs",
      app::makeServeTargetGuard(catalog, {"127.0.0.1", {"fcl-extra/vx0"}, false}));
  const injectors::Fault extra{
      "link_flap", injectors::InterfaceTarget{kExtraNs, "vx0"}, {{"down_ms", 1000}}};
  auto extra_prior = allowed.local_agent.captureFault(extra);
  ASSERT_TRUE(extra_prior.isOk()) << extra_prior.status().toString();
  ASSERT_TRUE(allowed.local_agent.applyFault(extra).isOk());
  EXPECT_FALSE(adminUp(kExtraNs, "vx0"));
  ASSERT_TRUE(allowed.local_agent.revertFault(extra, *extra_prior).isOk());
  EXPECT_TRUE(adminUp(kExtraNs, "vx0"));
}

TEST_F(AllowlistTest, ServeRefusesTheInterfaceCarryingItsOwnConnections) {
  // The lab's fabric plus a host whose NIC is the initial namespace's loopback.
  std::ifstream in(dir_ + "/state/fabrics/netns-lab.json");
  json fabric = json::parse(in, nullptr, false);
  ASSERT_TRUE(fabric.is_object()) << "no netns-lab.json in " << dir_ << "/state/fabrics";
  fabric["name"] = "allowlist-mgmt";
  fabric["hosts"].push_back({{"name", "ctl"},
                             {"netns", ""},
                             {"nics", json::array({{{"name", "lo"}, {"address", "127.0.0.1"}}})}});
  fabric["switches"][0]["ports"].push_back("p9");
  fabric["links"].push_back(
      {{"id", "ctl-sw0"}, {"host", "ctl"}, {"nic", "lo"}, {"switch", "sw0"}, {"port", "p9"}});
  {
    std::ofstream out(dir_ + "/state/fabrics/allowlist-mgmt.json");
    out << fabric.dump(2);
  }

  ServeProcess serve({}, dir_);
  const int port = serve.waitForPort(30000);
  ASSERT_GT(port, 0) << serve.output();
  auto fabrics = httpRequest(port, "GET", "/v1/fabrics");
  ASSERT_NE(fabrics.body.find("allowlist-mgmt"), std::string::npos)
      << "the fabric document was not accepted: " << fabrics.body;

  const std::string before = state("");
  for (const std::string kind : {"link_flap", "packet_loss"}) {
    json step = {{"kind", kind},
                 {"target", {{"host", "ctl"}, {"side", "host"}}},
                 {"at_ms", 0},
                 // egress: the one direction both loss backends accept, so that what is refused
                 // here is the target, on any kernel.
                 {"params", kind == "link_flap" ? json{{"down_ms", 1000}}
                                                : json{{"percent", 50}, {"direction", "egress"}}}};
    if (kind == "packet_loss") step["duration_ms"] = 1000;
    json scenario = {{"version", 1},
                     {"name", "allowlist-" + kind},
                     {"workload", {{"hosts", {"h0", "h1"}}, {"message_bytes", 65536}}},
                     {"baseline_ms", 500},
                     {"steps", json::array({step})},
                     {"recovery_ms", 500}};
    auto reply = httpRequest(port, "POST", "/v1/runs",
                             json{{"scenario", scenario}, {"fabric", "allowlist-mgmt"}}.dump());
    json run;
    if (reply.status == 403) {
      // Refused at submission: nothing was stored.
      EXPECT_NE(reply.body.find("lo"), std::string::npos) << reply.body;
      std::cout << kind << " on ctl/lo: refused at submission: " << reply.body << "\n";
      continue;
    }
    ASSERT_EQ(reply.status, 202) << reply.body;
    const std::string path = "/v1/runs/" + std::to_string(reply.json()["id"].get<int64_t>());
    const int64_t deadline = steadyNowNs() + int64_t{30000} * 1000000;
    for (;;) {
      run = httpRequest(port, "GET", path).json();
      const std::string s = run.value("state", "");
      if (s == "error" || s == "passed" || s == "failed" || s == "aborted" || s == "interrupted" ||
          steadyNowNs() > deadline) {
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    EXPECT_EQ(run.value("state", ""), "error") << run.dump(2);
    const std::string error = run.value("error", "");
    std::cout << kind << " on ctl/lo: run " << run.value("state", "") << ": " << error << "\n";
    EXPECT_NE(
        error.find("fault target lo (initial namespace) is this agent's management interface"),
        std::string::npos)
        << error;
    // Refused at capture, before the journal: no fault was ever applied or journaled.
    EXPECT_EQ(run.dump().find("fault_applied"), std::string::npos) << run.dump(2);
  }
  EXPECT_EQ(state(""), before);
  EXPECT_EQ(serve.stop(10000), 0) << serve.output();
  EXPECT_EQ(serve.output().find("start-up recovery: reverted"), std::string::npos);
}

}  // namespace
}  // namespace fabric_chaos::testing
