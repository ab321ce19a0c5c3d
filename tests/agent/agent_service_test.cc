// AgentService as a pure Request -> Response function over a LocalAgent whose registry holds an
// in-memory injector: authentication, the allowlist and the management interface, the fault
// lifecycle and its lease, the journal, and the buffering and long-polling of workload reports.
// Also the pure helpers (route parsing, token comparison, wire codecs, the sysfs probe).

#include "agent/agent_service.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include "agent/agent_wire.h"
#include "agent/local_agent.h"
#include "core/clock.h"
#include "injectors/registry.h"
#include "tests/agent/agent_test_support.h"
#include "tests/fakes/fake_links.h"
#include "tests/fakes/fake_process.h"
#include "tests/fakes/fake_verbs_shim_channel.h"

namespace fabric_chaos::agent {
namespace {

using nlohmann::json;
using testing::fakeFault;
using testing::FixedHostProbe;
using testing::RecordingInjector;
using testing::RecordingListener;
using testing::TempDir;

constexpr char kToken[] = "test-token-0123456789abcdef";

// Stands in for rank processes: remembers the listener, and stop() makes every rank exit.
class ScriptedWorkload : public WorkloadHandle {
 public:
  ScriptedWorkload(WorkloadListener* listener, std::vector<int> ranks)
      : listener_(listener), ranks_(std::move(ranks)) {}
  void stop(int grace_ms) override {
    std::lock_guard lock(mu_);
    if (stopped_) return;
    stopped_ = true;
    last_grace_ms = grace_ms;
    for (int rank : ranks_) listener_->onRankExit(rank, 143);
  }
  int runningRanks() const override { return stopped_ ? 0 : static_cast<int>(ranks_.size()); }
  int last_grace_ms = -1;

 private:
  std::mutex mu_;
  WorkloadListener* listener_;
  std::vector<int> ranks_;
  std::atomic<bool> stopped_{false};
};

class ScriptedAgent : public LocalAgent {
 public:
  using LocalAgent::LocalAgent;
  core::Result<std::unique_ptr<WorkloadHandle>> startWorkload(const std::vector<RankSpec>& ranks,
                                                              int64_t origin_ns,
                                                              WorkloadListener* listener) override {
    std::vector<int> ids;
    for (const auto& r : ranks) ids.push_back(r.rank);
    std::lock_guard lock(mu);
    this->listener = listener;
    this->origin_ns = origin_ns;
    this->ranks = ranks;
    return std::unique_ptr<WorkloadHandle>(std::make_unique<ScriptedWorkload>(listener, ids));
  }
  std::mutex mu;
  WorkloadListener* listener = nullptr;
  int64_t origin_ns = -1;
  std::vector<RankSpec> ranks;
};

class AgentServiceTest : public ::testing::Test {
 protected:
  AgentServiceTest() {
    auto injector = std::make_unique<RecordingInjector>();
    injector_ = injector.get();
    registry_.add(std::move(injector));
    agent_ =
        std::make_unique<ScriptedAgent>(registry_, launcher_, LocalAgentOptions{"/bin/true", ""});
  }

  AgentService& service(AgentServiceOptions options = {}) {
    if (options.token.empty()) options.token = kToken;
    if (options.management_interfaces.empty()) options.management_interfaces = {"eth1"};
    options.version = "0.1.0-test";
    service_.reset();
    service_ = std::make_unique<AgentService>(*agent_, probe_, options);
    return *service_;
  }

  core::HttpResponse call(const std::string& method, const std::string& target,
                          const json& body = nullptr, const std::string& auth = "") {
    return testing::callService(*service_, kToken, method, target, body, auth);
  }

  static json parse(const core::HttpResponse& response) { return testing::parseAnswer(response); }

  core::HttpResponse apply(const injectors::Fault& fault, int64_t lease_ms = 5000) {
    return call("POST", "/agent/v1/faults",
                {{"fault", injectors::toJson(fault)}, {"lease_ms", lease_ms}});
  }

  injectors::Registry registry_;
  RecordingInjector* injector_ = nullptr;
  fakes::FakeProcessLauncher launcher_;
  std::unique_ptr<ScriptedAgent> agent_;
  FixedHostProbe probe_;
  std::unique_ptr<AgentService> service_;
};

// ---------------------------------------------------------------------------------------------
// Authentication and /info

TEST_F(AgentServiceTest, EveryRequestNeedsTheBearerToken) {
  service();
  const std::vector<std::string> refused{"-", "Bearer wrong-token", std::string("Basic ") + kToken,
                                         std::string("Bearer ") + kToken + "x", "Bearer"};
  for (const auto& auth : refused) {
    auto response = call("GET", "/agent/v1/info", nullptr, auth);
    EXPECT_EQ(response.status, 401) << auth;
    json doc = parse(response);
    EXPECT_EQ(doc["error"]["code"], "UNAUTHENTICATED") << auth;
  }
  // Unknown paths are not revealed to an unauthenticated caller either.
  EXPECT_EQ(call("DELETE", "/agent/v1/nothing", nullptr, "-").status, 401);
  // Faults cannot be applied without it.
  EXPECT_EQ(call("POST", "/agent/v1/faults", {{"fault", injectors::toJson(fakeFault("eth0"))}},
                 "Bearer nope")
                .status,
            401);
  EXPECT_EQ(injector_->mutations(), 0);
  // The scheme is case-insensitive.
  EXPECT_EQ(call("GET", "/agent/v1/info", nullptr, std::string("bearer ") + kToken).status, 200);
}

TEST_F(AgentServiceTest, InfoDescribesTheHost) {
  AgentServiceOptions options;
  options.allowed_interfaces = {"eth0", "ns1/eth3"};
  options.agent_id = "vm1";
  service(options);
  auto response = call("GET", "/agent/v1/info");
  ASSERT_EQ(response.status, 200) << response.body;
  json doc = parse(response);
  EXPECT_EQ(doc["agent_id"], "vm1");
  EXPECT_EQ(doc["hostname"], "vm-test-1");
  EXPECT_EQ(doc["kernel"], "6.12.0-test");
  EXPECT_EQ(doc["version"], "0.1.0-test");
  ASSERT_EQ(doc["capabilities"].size(), 1u);
  EXPECT_EQ(doc["capabilities"][0]["kind"], "fake_down");
  EXPECT_EQ(doc["capabilities"][0]["available"], true);
  ASSERT_EQ(doc["netdevs"].size(), 2u);
  EXPECT_EQ(doc["netdevs"][1]["name"], "eth1");
  EXPECT_EQ(doc["netdevs"][1]["address"], "192.168.50.2");
  EXPECT_EQ(doc["netdevs"][1]["mtu"], 9000);
  ASSERT_EQ(doc["rdma_devices"].size(), 1u);
  EXPECT_EQ(doc["rdma_devices"][0]["netdev"], "eth1");
  EXPECT_EQ(doc["rdma_devices"][0]["state"], "4: ACTIVE");
  EXPECT_EQ(doc["allowed_interfaces"], json({"eth0", "ns1/eth3"}));
  EXPECT_EQ(doc["management_interfaces"], json({"eth1"}));
  EXPECT_EQ(doc["leases"], 0);
  const int64_t now = core::steadyNowNs();
  EXPECT_LE(doc["agent_now_ns"].get<int64_t>(), now);
  EXPECT_GT(doc["agent_now_ns"].get<int64_t>(), now - 1'000'000'000);
}

TEST_F(AgentServiceTest, RoutingErrors) {
  service();
  EXPECT_EQ(call("GET", "/agent/v1/nope").status, 404);
  EXPECT_EQ(call("GET", "/v1/runs").status, 404);
  auto wrong_method = call("PUT", "/agent/v1/info");
  EXPECT_EQ(wrong_method.status, 405);
  ASSERT_EQ(wrong_method.headers.size(), 1u);
  EXPECT_EQ(wrong_method.headers[0].second, "GET");
  core::HttpRequest bad_json;
  bad_json.method = "POST";
  bad_json.target = "/agent/v1/faults";
  bad_json.headers["authorization"] = std::string("Bearer ") + kToken;
  bad_json.body = "{not json";
  auto response = service_->handle(bad_json);
  EXPECT_EQ(response.status, 400);
  EXPECT_NE(parse(response)["error"]["message"].get<std::string>().find("not valid JSON"),
            std::string::npos);
  auto missing_target = call("POST", "/agent/v1/faults", {{"fault", {{"kind", "fake_down"}}}});
  EXPECT_EQ(missing_target.status, 400);
  EXPECT_NE(missing_target.body.find("fault.target: required"), std::string::npos)
      << missing_target.body;
  auto typo = call("POST", "/agent/v1/faults",
                   {{"fault", injectors::toJson(fakeFault("eth0"))}, {"lease_msec", 5}});
  EXPECT_EQ(typo.status, 400);
  EXPECT_NE(typo.body.find("lease_msec: unknown field"), std::string::npos);
  EXPECT_EQ(apply(fakeFault("eth0"), 0).status, 400);  // a lease must be positive
  EXPECT_EQ(injector_->mutations(), 0);
}

// ---------------------------------------------------------------------------------------------
// Permissions

TEST_F(AgentServiceTest, AnInterfaceOffTheAllowlistIsRefusedAndNothingChanges) {
  AgentServiceOptions options;
  options.allowed_interfaces = {"eth0", "ns1/eth3"};
  service(options);
  for (const auto& fault : {fakeFault("eth2"), fakeFault("eth0", "ns1"), fakeFault("eth3")}) {
    auto response = apply(fault);
    EXPECT_EQ(response.status, 403) << RecordingInjector::name(fault);
    json doc = parse(response);
    EXPECT_EQ(doc["error"]["code"], "PERMISSION_DENIED");
    EXPECT_NE(doc["error"]["message"].get<std::string>().find("not on this agent's allowlist"),
              std::string::npos)
        << doc.dump();
  }
  EXPECT_TRUE(injector_->calls().empty());
  EXPECT_EQ(service_->activeFaults(), 0u);
  EXPECT_EQ(apply(fakeFault("eth0")).status, 201);
  EXPECT_EQ(apply(fakeFault("eth3", "ns1")).status, 201);
}

TEST_F(AgentServiceTest, TheManagementInterfaceIsNeverTouched) {
  AgentServiceOptions options;
  options.allowed_interfaces = {"eth0", "eth1"};  // listing it does not help
  options.management_interfaces = {"eth1"};
  service(options);
  auto response = apply(fakeFault("eth1"));
  EXPECT_EQ(response.status, 403);
  EXPECT_NE(parse(response)["error"]["message"].get<std::string>().find("management interface"),
            std::string::npos);
  EXPECT_TRUE(injector_->calls().empty());

  // With an empty allowlist everything else is allowed, including eth1 in another namespace.
  service();
  EXPECT_EQ(apply(fakeFault("eth1")).status, 403);
  EXPECT_EQ(apply(fakeFault("eth1", "h2")).status, 201);
  EXPECT_EQ(apply(fakeFault("eth7")).status, 201);
}

TEST(CheckTargetAllowed, Rules) {
  using injectors::InterfaceTarget;
  EXPECT_TRUE(checkTargetAllowed(InterfaceTarget{"", "eth0"}, {}, {"eth1"}).isOk());
  EXPECT_EQ(checkTargetAllowed(InterfaceTarget{"", "eth1"}, {}, {"eth1"}).code(),
            core::StatusCode::kPermissionDenied);
  EXPECT_TRUE(checkTargetAllowed(InterfaceTarget{"ns", "eth1"}, {}, {"eth1"}).isOk());
  EXPECT_TRUE(checkTargetAllowed(InterfaceTarget{"ns", "eth1"}, {"ns/eth1"}, {"eth1"}).isOk());
  EXPECT_FALSE(checkTargetAllowed(InterfaceTarget{"ns", "eth1"}, {"eth1"}, {}).isOk());
  EXPECT_FALSE(checkTargetAllowed(InterfaceTarget{"", "eth1"}, {"ns/eth1"}, {}).isOk());
  // An RDMA port is allowed when the netdev it sends through is; without a way to find that
  // netdev, or for a port without one, it is refused.
  const injectors::RdmaPortTarget rxe0{"rxe0", 1, 0};
  const core::Status unknown_netdev = checkTargetAllowed(rxe0, {}, {});
  EXPECT_EQ(unknown_netdev.code(), core::StatusCode::kPermissionDenied);
  EXPECT_EQ(unknown_netdev.message(),
            "fault target RDMA port rxe0:1 (gid 0) is refused: this agent does not act on RDMA "
            "ports (the host's own agent, fabric-chaos agent, does)");
  const RdmaNetdevLookup netdevs =
      [](const injectors::RdmaPortTarget& port) -> core::Result<std::string> {
    if (port.device == "rxe0") return std::string("eth0");
    if (port.device == "mlx5_0") return std::string("eth1");
    if (port.device == "mlx4_0") return std::string();
    return core::Status(core::StatusCode::kNotFound, "no RDMA device " + port.device);
  };
  EXPECT_TRUE(
      checkTargetAllowed(rxe0, {"eth0"}, {"eth1"}, true, kRestartWithAllow, netdevs).isOk());
  const core::Status management = checkTargetAllowed(injectors::RdmaPortTarget{"mlx5_0", 1, 0}, {},
                                                     {"eth1"}, true, kRestartWithAllow, netdevs);
  EXPECT_EQ(management.code(), core::StatusCode::kPermissionDenied);
  EXPECT_EQ(
      management.message().rfind("fault target RDMA port mlx5_0:1 (gid 0) sends through eth1: "
                                 "fault target eth1 (initial namespace) is this agent's "
                                 "management interface",
                                 0),
      0u)
      << management.message();
  EXPECT_FALSE(checkTargetAllowed(rxe0, {"ns/eth0"}, {}, true, kRestartWithAllow, netdevs).isOk());
  EXPECT_EQ(checkTargetAllowed(injectors::RdmaPortTarget{"mlx4_0", 1, 0}, {}, {}, true,
                               kRestartWithAllow, netdevs)
                .code(),
            core::StatusCode::kPermissionDenied);
  const core::Status gone = checkTargetAllowed(injectors::RdmaPortTarget{"rxe9", 1, 0}, {}, {},
                                               true, kRestartWithAllow, netdevs);
  EXPECT_EQ(gone.code(), core::StatusCode::kNotFound);
  EXPECT_NE(gone.message().find("no RDMA device rxe9"), std::string::npos) << gone.message();
  // A process target is a program that loaded the verbs fault library into this agent's own
  // socket directory: allowed whatever the interface list says.
  EXPECT_TRUE(
      checkTargetAllowed(injectors::ProcessTarget{std::nullopt, 2}, {"ns/eth1"}, {}, false).isOk());
  // IB ports and SMs are listed by their lock keys.
  const injectors::IbPortTarget uplink{"l0", 3, "fcib-subnet"};
  EXPECT_TRUE(checkTargetAllowed(uplink, {"ib/fcib-subnet/l0/3"}, {}).isOk());
  const core::Status other_port = checkTargetAllowed(
      injectors::IbPortTarget{"l0", 4, "fcib-subnet"}, {"ib/fcib-subnet/l0/3"}, {});
  EXPECT_EQ(other_port.code(), core::StatusCode::kPermissionDenied);
  EXPECT_NE(other_port.message().find("IB port l0[4] (ib/fcib-subnet/l0/4) is not on this "
                                      "agent's allowlist"),
            std::string::npos)
      << other_port.message();
  EXPECT_TRUE(checkTargetAllowed(injectors::SubnetManagerTarget{"", "h0", "fcib-subnet"},
                                 {"sm/node/h0/fcib-subnet"}, {})
                  .isOk());
  EXPECT_FALSE(checkTargetAllowed(injectors::SubnetManagerTarget{"", "h0", "fcib-subnet"},
                                  {"sm/node/h0"}, {})
                   .isOk());
  EXPECT_TRUE(checkTargetAllowed(uplink, {}, {}).isOk());  // an agent that allows anything
  EXPECT_FALSE(checkTargetAllowed(uplink, {}, {}, false).isOk());
  // A traffic set is allowed when every endpoint is, and refused naming the first that is not.
  EXPECT_TRUE(checkTargetAllowed(injectors::TrafficSetTarget{{{"ns", "eth1"}}, {{"ns2", "eth0"}}},
                                 {"ns/eth1", "ns2/eth0"}, {})
                  .isOk());
  const core::Status traffic = checkTargetAllowed(
      injectors::TrafficSetTarget{{{"ns", "eth1"}}, {{"ns2", "eth0"}}}, {"ns/eth1"}, {});
  EXPECT_EQ(traffic.code(), core::StatusCode::kPermissionDenied);
  EXPECT_NE(traffic.message().find("fault target ns2/eth0 is not on this agent's allowlist"),
            std::string::npos)
      << traffic.message();
}

// ---------------------------------------------------------------------------------------------
// Fault lifecycle

TEST_F(AgentServiceTest, ApplyRenewObserveRevert) {
  service();
  auto applied = apply(fakeFault("eth0"), 5000);
  ASSERT_EQ(applied.status, 201) << applied.body;
  json doc = parse(applied);
  EXPECT_EQ(doc["id"], "f-1");
  EXPECT_EQ(doc["prior"], json({{"up", true}}));
  const int64_t deadline = doc["lease_deadline_ns"].get<int64_t>();
  EXPECT_GT(deadline, core::steadyNowNs() + 4'000'000'000);
  EXPECT_FALSE(injector_->up("eth0"));
  EXPECT_EQ(service_->activeFaults(), 1u);

  auto observed = call("GET", "/agent/v1/faults/f-1");
  ASSERT_EQ(observed.status, 200) << observed.body;
  EXPECT_EQ(parse(observed)["observed"], json({{"up", false}}));

  auto listed = call("GET", "/agent/v1/faults");
  ASSERT_EQ(listed.status, 200);
  EXPECT_EQ(parse(listed)["faults"].size(), 1u);

  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  auto renewed = call("POST", "/agent/v1/faults/f-1/renew", {{"lease_ms", 8000}});
  ASSERT_EQ(renewed.status, 200) << renewed.body;
  EXPECT_GT(parse(renewed)["lease_deadline_ns"].get<int64_t>(), deadline);
  EXPECT_EQ(parse(renewed)["lease_ms"], 8000);
  EXPECT_EQ(call("POST", "/agent/v1/faults/f-1/renew").status, 200);  // keeps its lease_ms

  auto reverted = call("DELETE", "/agent/v1/faults/f-1");
  ASSERT_EQ(reverted.status, 200) << reverted.body;
  EXPECT_EQ(parse(reverted)["observed"], json({{"up", false}}));  // seen just before the revert
  EXPECT_TRUE(injector_->up("eth0"));
  EXPECT_EQ(service_->activeFaults(), 0u);

  EXPECT_EQ(call("DELETE", "/agent/v1/faults/f-1").status, 404);
  EXPECT_EQ(call("POST", "/agent/v1/faults/f-1/renew").status, 404);
  EXPECT_EQ(call("GET", "/agent/v1/faults/f-1").status, 404);
  EXPECT_EQ(call("POST", "/agent/v1/faults/f-42/renew").status, 404);
}

TEST_F(AgentServiceTest, ApplyingTheSameFaultTwiceReturnsTheSameId) {
  service();
  auto first = apply(fakeFault("eth0"));
  ASSERT_EQ(first.status, 201);
  auto second = apply(fakeFault("eth0"));
  ASSERT_EQ(second.status, 200) << second.body;
  EXPECT_EQ(parse(second)["id"], parse(first)["id"]);
  EXPECT_EQ(parse(second)["existing"], true);
  EXPECT_EQ(parse(second)["prior"], json({{"up", true}}));  // the prior of the first apply
  int applies = 0;
  for (const auto& c : injector_->calls()) applies += c.rfind("apply", 0) == 0;
  EXPECT_EQ(applies, 1);
  // Other parameters on the same target: refused, not stacked.
  auto other = apply(fakeFault("eth0", "", {{"down_ms", 5}}));
  EXPECT_EQ(other.status, 409) << other.body;
  EXPECT_EQ(service_->activeFaults(), 1u);
}

TEST_F(AgentServiceTest, InvalidParametersAndFailedAppliesLeaveNothingBehind) {
  service();
  auto invalid = apply(fakeFault("eth0", "", {{"down_ms", "soon"}}));
  EXPECT_EQ(invalid.status, 400);
  EXPECT_NE(invalid.body.find("down_ms"), std::string::npos);
  auto unknown = call("POST", "/agent/v1/faults",
                      {{"fault", {{"kind", "smoke"}, {"target", {{"ifname", "eth0"}}}}}});
  EXPECT_EQ(unknown.status, 400);
  EXPECT_NE(unknown.body.find("unknown fault kind"), std::string::npos);
  EXPECT_EQ(injector_->mutations(), 0);

  injector_->failApply(true);
  auto failed = apply(fakeFault("eth0"));
  EXPECT_EQ(failed.status, 500);
  EXPECT_NE(failed.body.find("injected apply failure"), std::string::npos);
  EXPECT_EQ(service_->activeFaults(), 0u);
  EXPECT_TRUE(injector_->up("eth0"));  // the half-applied fault was put back
}

TEST_F(AgentServiceTest, AnExpiredLeaseIsRevertedWithoutTheController) {
  AgentServiceOptions options;
  options.lease_check_ms = 100;
  service(options).startLeaseThread();
  const int64_t start = core::steadyNowNs();
  ASSERT_EQ(apply(fakeFault("eth0"), 200).status, 201);
  ASSERT_FALSE(injector_->up("eth0"));
  while (!injector_->up("eth0") && core::steadyNowNs() - start < 2'000'000'000) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const int64_t took_ms = (core::steadyNowNs() - start) / 1000000;
  EXPECT_TRUE(injector_->up("eth0"));
  EXPECT_GE(took_ms, 200);
  EXPECT_LE(took_ms, 200 + 300);
  EXPECT_EQ(service_->activeFaults(), 0u);
  EXPECT_EQ(call("POST", "/agent/v1/faults/f-1/renew").status, 404);
}

TEST_F(AgentServiceTest, ARenewalArrivingAfterExpiryDoesNotReviveTheFault) {
  service();  // no lease thread: expiry is driven by hand
  ASSERT_EQ(apply(fakeFault("eth0"), 1).status, 201);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(call("POST", "/agent/v1/faults/f-1/renew", {{"lease_ms", 5000}}).status, 404);
  EXPECT_EQ(service_->expireLeases(), 1);
  EXPECT_TRUE(injector_->up("eth0"));
}

TEST_F(AgentServiceTest, AFailedExpiryRevertIsRetried) {
  AgentServiceOptions options;
  options.revert_retry_ms = 20;
  service(options);
  ASSERT_EQ(apply(fakeFault("eth0"), 1).status, 201);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  injector_->failRevert(true);
  EXPECT_EQ(service_->expireLeases(), 0);
  EXPECT_EQ(service_->activeFaults(), 1u);
  EXPECT_EQ(service_->expireLeases(), 0);  // not before revert_retry_ms
  injector_->failRevert(false);
  std::this_thread::sleep_for(std::chrono::milliseconds(25));
  EXPECT_EQ(service_->expireLeases(), 1);
  EXPECT_TRUE(injector_->up("eth0"));
}

TEST_F(AgentServiceTest, RevertByDescription) {
  service();
  // An active fault is found by kind and target.
  ASSERT_EQ(apply(fakeFault("eth0")).status, 201);
  auto active =
      call("POST", "/agent/v1/faults/revert", {{"fault", injectors::toJson(fakeFault("eth0"))}});
  ASSERT_EQ(active.status, 200) << active.body;
  EXPECT_EQ(parse(active)["reverted"], "active");
  EXPECT_EQ(parse(active)["id"], "f-1");
  EXPECT_TRUE(injector_->up("eth0"));

  // A fault the agent reverted earlier: its captured prior is used again (here: "was down").
  injector_->setUp("eth2", false);
  ASSERT_EQ(apply(fakeFault("eth2")).status, 201);
  ASSERT_EQ(call("DELETE", "/agent/v1/faults/f-2").status, 200);
  auto recent =
      call("POST", "/agent/v1/faults/revert", {{"fault", injectors::toJson(fakeFault("eth2"))}});
  ASSERT_EQ(recent.status, 200);
  EXPECT_EQ(parse(recent)["reverted"], "recent_prior");
  EXPECT_FALSE(injector_->up("eth2"));
  EXPECT_EQ(injector_->calls().back(), "revert eth2 {\"up\":false}");

  // Never seen: the injector restores its default state from an empty prior.
  injector_->setUp("eth5", false);
  auto unknown =
      call("POST", "/agent/v1/faults/revert", {{"fault", injectors::toJson(fakeFault("eth5"))}});
  ASSERT_EQ(unknown.status, 200);
  EXPECT_EQ(parse(unknown)["reverted"], "default");
  EXPECT_EQ(injector_->calls().back(), "revert eth5 {}");
  EXPECT_TRUE(injector_->up("eth5"));

  // The management interface: nothing was ever applied there, so there is nothing to do.
  const int before = injector_->mutations();
  auto mgmt =
      call("POST", "/agent/v1/faults/revert", {{"fault", injectors::toJson(fakeFault("eth1"))}});
  ASSERT_EQ(mgmt.status, 200);
  EXPECT_EQ(parse(mgmt)["reverted"], "none");
  EXPECT_EQ(injector_->mutations(), before);
}

TEST_F(AgentServiceTest, ObserveAndValidateByDescription) {
  service();
  auto observed =
      call("POST", "/agent/v1/faults/observe", {{"fault", injectors::toJson(fakeFault("eth0"))}});
  ASSERT_EQ(observed.status, 200);
  EXPECT_EQ(parse(observed)["observed"], json({{"up", true}}));
  EXPECT_EQ(
      call("POST", "/agent/v1/validate", {{"kind", "fake_down"}, {"params", {{"down_ms", 3}}}})
          .status,
      200);
  auto bad = call("POST", "/agent/v1/validate", {{"kind", "fake_down"}, {"params", {{"up", 3}}}});
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(bad.body.find("up: unknown parameter"), std::string::npos);
  EXPECT_EQ(call("POST", "/agent/v1/validate", {{"kind", "smoke"}}).status, 400);
}

TEST_F(AgentServiceTest, ShutdownRevertsEverythingAndRefusesNewFaults) {
  service();
  ASSERT_EQ(apply(fakeFault("eth0")).status, 201);
  ASSERT_EQ(apply(fakeFault("eth2")).status, 201);
  EXPECT_EQ(service_->shutdown(100), 0);
  EXPECT_TRUE(injector_->up("eth0"));
  EXPECT_TRUE(injector_->up("eth2"));
  EXPECT_EQ(service_->activeFaults(), 0u);
  EXPECT_EQ(apply(fakeFault("eth3")).status, 503);
}

TEST_F(AgentServiceTest, TheJournalLetsTheNextProcessRevertWhatACrashedOneLeft) {
  TempDir dir;
  AgentServiceOptions options;
  options.journal_path = dir.path() + "/agent-journal.json";
  injector_->setUp("eth2", false);  // was down before the fault: must stay down
  service(options);
  ASSERT_EQ(apply(fakeFault("eth0"), 600000).status, 201);
  ASSERT_EQ(apply(fakeFault("eth2"), 600000).status, 201);
  ASSERT_EQ(call("DELETE", "/agent/v1/faults/f-1").status, 200);
  ASSERT_EQ(apply(fakeFault("eth0"), 600000).status, 201);  // f-3
  {
    std::ifstream in(options.journal_path);
    json journal = json::parse(in);
    EXPECT_EQ(journal["faults"].size(), 2u);
    EXPECT_EQ(journal["next_fault_id"], 4);
  }
  // "Crash": the service goes away without reverting (its destructor does not revert).
  service_.reset();
  EXPECT_FALSE(injector_->up("eth0"));

  auto& restarted = service(options);
  auto recovery = restarted.recoverJournal();
  EXPECT_EQ(recovery.reverted, 2);
  EXPECT_EQ(recovery.failed, 0);
  EXPECT_TRUE(injector_->up("eth0"));
  EXPECT_FALSE(injector_->up("eth2"));
  // Ids continue where the previous process stopped: a stale id cannot name a new fault.
  auto next = apply(fakeFault("eth0"));
  EXPECT_EQ(parse(next)["id"], "f-4");
}

// The previous version journaled untagged interface targets; an agent upgraded while a fault was
// in force must still revert it.
TEST_F(AgentServiceTest, AJournalOfThePreviousVersionIsStillReverted) {
  TempDir dir;
  AgentServiceOptions options;
  options.journal_path = dir.path() + "/agent-journal.json";
  {
    std::ofstream out(options.journal_path);
    out << R"({"version": 1, "next_fault_id": 8, "faults": [
      {"id": "f-7", "fault": {"kind": "fake_down", "target": {"netns": "ns1", "ifname": "eth3"},
                              "params": {"down_ms": 1000}},
       "prior": {"up": true}, "lease_ms": 600000}]})";
  }
  injector_->setUp("ns1/eth3", false);  // what the old agent's fault left
  auto& restarted = service(options);
  auto recovery = restarted.recoverJournal();
  EXPECT_EQ(recovery.reverted, 1);
  EXPECT_EQ(recovery.failed, 0);
  EXPECT_TRUE(injector_->up("ns1/eth3"));
  EXPECT_EQ(restarted.activeFaults(), 0u);
}

TEST_F(AgentServiceTest, AFaultTheJournalCannotRevertStaysActiveForRetries) {
  TempDir dir;
  AgentServiceOptions options;
  options.journal_path = dir.path() + "/agent-journal.json";
  options.revert_retry_ms = 10;
  service(options);
  ASSERT_EQ(apply(fakeFault("eth0"), 600000).status, 201);
  service_.reset();
  injector_->failRevert(true);
  auto recovery = service(options).recoverJournal();
  EXPECT_EQ(recovery.failed, 1);
  EXPECT_EQ(service_->activeFaults(), 1u);
  injector_->failRevert(false);
  std::this_thread::sleep_for(std::chrono::milliseconds(15));
  EXPECT_EQ(service_->expireLeases(), 1);
  EXPECT_TRUE(injector_->up("eth0"));
}

// ---------------------------------------------------------------------------------------------
// Workloads

TEST_F(AgentServiceTest, WorkloadReportsAreBufferedAndLongPolled) {
  service();
  RankSpec spec;
  spec.rank = 3;
  spec.world = 4;
  spec.listen_addr = "10.0.0.3";
  spec.port = 17000;
  auto started =
      call("POST", "/agent/v1/workloads", {{"ranks", {rankSpecToJson(spec)}}, {"origin_ns", 0}});
  ASSERT_EQ(started.status, 201) << started.body;
  const std::string id = parse(started)["id"];
  EXPECT_EQ(id, "w-1");
  ASSERT_NE(agent_->listener, nullptr);
  EXPECT_EQ(agent_->origin_ns, 0);
  ASSERT_EQ(agent_->ranks.size(), 1u);
  EXPECT_EQ(agent_->ranks[0].listen_addr, "10.0.0.3");
  WorkloadListener* listener = agent_->listener;

  // Nothing yet: the long poll waits, then answers empty.
  const int64_t t0 = core::steadyNowNs();
  auto empty = call("GET", "/agent/v1/workloads/" + id + "/reports?after=0&wait_ms=150");
  EXPECT_GE(core::steadyNowNs() - t0, 140'000'000);
  ASSERT_EQ(empty.status, 200);
  EXPECT_EQ(parse(empty)["next"], 0);
  EXPECT_EQ(parse(empty)["running"], 1);
  EXPECT_EQ(parse(empty)["complete"], false);

  // A waiting poll returns as soon as something arrives.
  auto poll = std::async(std::launch::async, [&] {
    return call("GET", "/agent/v1/workloads/" + id + "/reports?after=0&wait_ms=5000");
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const int64_t pushed = core::steadyNowNs();
  listener->onEvent(3, 1000.5, "rank_ready", {{"pid", 7}});
  listener->onSamples({{3, 0, 2000.25, 1.5, 4096}, {3, 1, 2002.0, 1.25, 4096}});
  auto first = poll.get();
  EXPECT_LT(core::steadyNowNs() - pushed, 1'000'000'000);
  ASSERT_EQ(first.status, 200);
  json batch = parse(first);
  int64_t next = batch["next"];
  EXPECT_GE(next, 1);
  // The rest is fetched from `next` on.
  if (next < 3) {
    json rest =
        parse(call("GET", "/agent/v1/workloads/" + id + "/reports?after=" + std::to_string(next)));
    for (auto& s : rest["samples"]) batch["samples"].push_back(s);
    for (auto& e : rest["events"]) batch["events"].push_back(e);
    next = rest["next"];
  }
  EXPECT_EQ(next, 3);
  ASSERT_EQ(batch["events"].size(), 1u);
  EXPECT_EQ(batch["events"][0]["kind"], "rank_ready");
  EXPECT_EQ(batch["events"][0]["t_ns"], 1'000'500'000);
  EXPECT_EQ(batch["events"][0]["detail"]["pid"], 7);
  ASSERT_EQ(batch["samples"].size(), 2u);
  EXPECT_EQ(batch["samples"][0], json({3, 0, 2'000'250'000, 1'500'000, 4096}));
  EXPECT_EQ(batch["samples"][1], json({3, 1, 2'002'000'000, 1'250'000, 4096}));

  // Stop: the exits come through, and the final reports stay readable.
  auto stopped = call("DELETE", "/agent/v1/workloads/" + id + "?grace_ms=1500");
  ASSERT_EQ(stopped.status, 200) << stopped.body;
  auto final_batch =
      parse(call("GET", "/agent/v1/workloads/" + id + "/reports?after=" + std::to_string(next)));
  ASSERT_EQ(final_batch["exits"].size(), 1u);
  EXPECT_EQ(final_batch["exits"][0], json({{"rank", 3}, {"code", 143}}));
  EXPECT_EQ(final_batch["running"], 0);
  EXPECT_EQ(final_batch["complete"], true);
  const int64_t end = final_batch["next"];
  // Asking for what follows the end acknowledges it; then the agent forgets the workload.
  auto ack = call("GET", "/agent/v1/workloads/" + id + "/reports?after=" + std::to_string(end));
  EXPECT_EQ(ack.status, 200);
  EXPECT_EQ(parse(ack)["complete"], true);
  EXPECT_EQ(call("GET", "/agent/v1/workloads/" + id + "/reports?after=0").status, 404);
  EXPECT_EQ(call("DELETE", "/agent/v1/workloads/" + id).status, 404);
}

TEST_F(AgentServiceTest, WorkloadRequestsAreChecked) {
  service();
  EXPECT_EQ(call("POST", "/agent/v1/workloads", {{"ranks", json::array()}}).status, 400);
  auto typo = call("POST", "/agent/v1/workloads", {{"ranks", {{{"rank", 0}, {"wolrd", 2}}}}});
  EXPECT_EQ(typo.status, 400);
  EXPECT_NE(typo.body.find("ranks[0].wolrd: unknown field"), std::string::npos) << typo.body;
  EXPECT_EQ(call("GET", "/agent/v1/workloads/w-9/reports").status, 404);
  auto started = call("POST", "/agent/v1/workloads", {{"ranks", {{{"rank", 0}}}}});
  ASSERT_EQ(started.status, 201);
  EXPECT_EQ(call("GET", "/agent/v1/workloads/w-1/reports?after=-1").status, 400);
  EXPECT_EQ(call("GET", "/agent/v1/workloads/w-1/reports?wait_ms=999999").status, 400);
}

TEST(ReportBuffer, BatchesFollowTheSequenceAndExitsComeAfterTheirSamples) {
  ReportBuffer buffer(0, 2, 1000);
  buffer.onSamples({{0, 0, 1.0, 1.0, 8}, {0, 1, 2.0, 1.0, 8}, {0, 2, 3.0, 1.0, 8}});
  buffer.onRankExit(0, 0);
  buffer.onSamples({{1, 0, 4.0, 1.0, 8}});
  auto first = buffer.fetch(0, 2, 0);
  EXPECT_EQ(first.samples.size(), 2u);
  EXPECT_TRUE(first.exits.empty());  // rank 0's exit follows its third sample
  EXPECT_EQ(first.next, 2);
  EXPECT_FALSE(first.complete);
  auto second = buffer.fetch(first.next, 2, 0);
  ASSERT_EQ(second.samples.size(), 2u);
  ASSERT_EQ(second.exits.size(), 1u);
  EXPECT_EQ(second.exits[0]["rank"], 0);
  EXPECT_EQ(second.next, 5);
  EXPECT_EQ(second.running, 1);
  EXPECT_FALSE(second.complete);
  buffer.onRankExit(1, 1);
  auto third = buffer.fetch(second.next, 2, 0);
  EXPECT_EQ(third.exits.size(), 1u);
  EXPECT_TRUE(third.complete);
  EXPECT_EQ(third.running, 0);
  // Asking again from the start replays everything (a lost answer is recoverable).
  auto replay = buffer.fetch(0, 100, 0);
  EXPECT_EQ(replay.samples.size(), 4u);
  EXPECT_EQ(replay.exits.size(), 2u);
}

TEST(ReportBuffer, TheOldestAreDroppedBeyondCapacityButNeverTheExits) {
  ReportBuffer buffer(0, 2, 10);
  buffer.onRankExit(1, 7);
  for (int i = 0; i < 25; ++i) buffer.onSamples({{0, i, static_cast<double>(i), 1.0, 8}});
  auto batch = buffer.fetch(0, 100, 0);
  ASSERT_EQ(batch.samples.size(), 10u);
  EXPECT_EQ(batch.samples[0][1], 15);  // iterations 15..24 survive
  ASSERT_EQ(batch.exits.size(), 1u);
  EXPECT_EQ(batch.exits[0]["code"], 7);
  ASSERT_EQ(batch.events.size(), 1u);
  EXPECT_EQ(batch.events[0]["kind"], "reports_dropped");
  EXPECT_EQ(batch.events[0]["detail"]["count"], 15);
  EXPECT_EQ(batch.dropped_total, 15);
  // A reader that is up to date is not told again.
  auto later = buffer.fetch(batch.next, 100, 0);
  EXPECT_TRUE(later.events.empty());
}

TEST(ReportBuffer, ALongPollEndsAtTheDeadlineOrWhenClosed) {
  ReportBuffer buffer(0, 1, 10);
  const int64_t t0 = core::steadyNowNs();
  auto empty = buffer.fetch(0, 10, 100);
  EXPECT_GE(core::steadyNowNs() - t0, 95'000'000);
  EXPECT_TRUE(empty.samples.empty());
  auto waiting = std::async(std::launch::async, [&] { return buffer.fetch(0, 10, 10000); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const int64_t closed_at = core::steadyNowNs();
  buffer.close();
  waiting.get();
  EXPECT_LT(core::steadyNowNs() - closed_at, 1'000'000'000);
}

// ---------------------------------------------------------------------------------------------
// Pure helpers

TEST(ConstantTimeEquals, ComparesWholeStrings) {
  EXPECT_TRUE(constantTimeEquals("abc", "abc"));
  EXPECT_TRUE(constantTimeEquals("", ""));
  EXPECT_FALSE(constantTimeEquals("abc", "abd"));
  EXPECT_FALSE(constantTimeEquals("abc", "ab"));
  EXPECT_FALSE(constantTimeEquals("ab", "abc"));
  EXPECT_FALSE(constantTimeEquals("", "a"));
  EXPECT_FALSE(constantTimeEquals(std::string("a\0b", 3), std::string("a\0c", 3)));
}

TEST(DefaultRouteInterface, PicksTheLowestMetricDefaultRoute) {
  const std::string table =
      "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
      "eth1\t0032A8C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n"
      "eth2\t00000000\t0102A8C0\t0003\t0\t0\t200\t00000000\t0\t0\t0\n"
      "eth0\t00000000\t0202000A\t0003\t0\t0\t100\t00000000\t0\t0\t0\n"
      "eth3\t00000000\t0202000A\t0002\t0\t0\t1\t00000000\t0\t0\t0\n";  // not RTF_UP
  EXPECT_EQ(defaultRouteInterface(table), "eth0");
  EXPECT_EQ(defaultRouteInterface("Iface\tDestination\n"), "");
  EXPECT_EQ(defaultRouteInterface(""), "");
}

TEST(RankSpecJson, RoundTripsAndRejectsUnknownFields) {
  RankSpec spec;
  spec.rank = 2;
  spec.world = 8;
  spec.netns = "h3";
  spec.listen_addr = "10.1.0.3";
  spec.port = 17002;
  spec.next_addr = "10.1.0.4";
  spec.next_port = 17003;
  spec.message_bytes = 1 << 22;
  spec.compute_ms = 7;
  spec.peer_timeout_ms = 1234;
  spec.reconnect_budget_ms = 5678;
  spec.max_duration_ms = 99000;
  spec.transport = "ib_probe";
  spec.ib_node = "h3";
  spec.ib_preload = "/usr/lib/umad2sim.so";
  spec.ib_dir = "/run/fc/ib/ib-lab";
  spec.verbs_shim = true;
  auto back = rankSpecFromJson(rankSpecToJson(spec));
  ASSERT_TRUE(back.isOk()) << back.status().toString();
  EXPECT_EQ(rankSpecToJson(*back), rankSpecToJson(spec));
  EXPECT_EQ(back->ib_node, "h3");
  EXPECT_TRUE(back->verbs_shim);
  EXPECT_EQ(rankSpecFromJson({{"verbs_shim", 1}}).status().message(),
            "verbs_shim: must be a boolean");
  EXPECT_FALSE(rankSpecFromJson({{"transport", "udp"}}).isOk());
  EXPECT_EQ(rankSpecFromJson({{"rank", 0}, {"port", 70000}}).status().code(),
            core::StatusCode::kInvalidArgument);
  EXPECT_EQ(rankSpecFromJson({{"rank", "0"}}).status().code(), core::StatusCode::kInvalidArgument);

  // An external workload's rank carries its command, parser and rendezvous.
  RankSpec exec;
  exec.rank = 1;
  exec.world = 2;
  exec.transport = "exec";
  exec.exec.command = {"/usr/bin/python3", "{script}", "--timeout-s", "20"};
  exec.exec.script = "pytorch-ddp";
  exec.exec.env = {"GLOO_SOCKET_IFNAME=eth0"};
  exec.exec.parser = {workload::StepFormat::kRegex, "took (?<duration_ms>\\d+)"};
  exec.exec.silence_ms = 0;
  exec.exec.reports_steps = false;
  exec.exec.master_addr = "10.0.0.1";
  exec.exec.master_port = 29500;
  exec.exec.ifname = "eth0";
  auto exec_back = rankSpecFromJson(rankSpecToJson(exec));
  ASSERT_TRUE(exec_back.isOk()) << exec_back.status().toString();
  EXPECT_EQ(rankSpecToJson(*exec_back), rankSpecToJson(exec));
  EXPECT_EQ(exec_back->exec.parser.pattern, "took (?<duration_ms>\\d+)");
  EXPECT_FALSE(exec_back->exec.reports_steps);
  json bad = rankSpecToJson(exec);
  bad["exec"]["pattern"] = "(?<step>\\d+)";
  EXPECT_EQ(rankSpecFromJson(bad).status().code(), core::StatusCode::kInvalidArgument);
  bad = rankSpecToJson(exec);
  bad["exec"]["command"] = json::array();
  EXPECT_EQ(rankSpecFromJson(bad).status().message(), "exec.command: must name a program");
  bad = rankSpecToJson(exec);
  bad["exec"]["script"] = 3;
  EXPECT_EQ(rankSpecFromJson(bad).status().message(), "exec.script: must be a string");
  EXPECT_FALSE(rankSpecFromJson({{"bogus", 1}}).isOk());
  auto defaults = rankSpecFromJson(json::object());
  ASSERT_TRUE(defaults.isOk());
  EXPECT_EQ(defaults->message_bytes, RankSpec{}.message_bytes);
}

TEST(KindInfoJson, RoundTrips) {
  injectors::KindInfo info{"packet_loss", "drops packets", false, "no netem", "nftables"};
  auto back = kindInfoFromJson(kindInfoToJson(info));
  EXPECT_EQ(back.kind, info.kind);
  EXPECT_EQ(back.description, info.description);
  EXPECT_EQ(back.available, info.available);
  EXPECT_EQ(back.reason, info.reason);
  EXPECT_EQ(back.backend, info.backend);
}

class FixedRdmaDevices : public sys::RdmaDevices {
 public:
  std::vector<sys::RdmaDevice> list() override { return {{"rxe0", {{1, "ACTIVE", 16}}}}; }
  std::vector<sys::RdmaPortCounters> hwCounters() override {
    return {{"rxe0", 1, {{"rcvd_seq_err", 2}, {"sent_pkts", 900}}}};
  }
};

// GET /agent/v1/describe: the agent's own report (version, host, kinds, netdevs of every namespace
// it is told about through the links adapter, RDMA devices, clock), decoded by the controller.
TEST_F(AgentServiceTest, DescribeReportsTheAgentAndItsHost) {
  fakes::FakeLinks links;
  links.addLink("", {"eth0", 0, true, true, "", "52:54:00:00:00:01"});
  links.addLink("", {"lo", 0, true, true, "unknown", "00:00:00:00:00:00"});
  links.addLink("lab-sw0", {"p0", 0, true, false, "", "02:00:00:00:00:10"});
  FixedRdmaDevices rdma;
  fakes::FakeVerbsShimChannel shims;
  shims.addProcess({4242, "ib_write_bw", 1, {"rxe0"}, json::array(), ""});
  LocalAgentOptions options{"/bin/true", ""};
  options.verbs_shims = &shims;
  options.version = "7.7.7";
  options.hostname = "guest-1";
  options.links = &links;
  options.rdma = &rdma;
  // "gone" has no links in the fake: a vanished namespace is just empty.
  options.netdev_namespaces = [] { return std::vector<std::string>{"lab-sw0", "", "gone"}; };
  agent_ = std::make_unique<ScriptedAgent>(registry_, launcher_, options);
  service();
  const int64_t before = core::steadyNowNs();
  auto response = call("GET", "/agent/v1/describe");
  ASSERT_EQ(response.status, 200) << response.body;
  json doc = parse(response);
  EXPECT_EQ(doc["version"], "7.7.7");
  EXPECT_EQ(doc["hostname"], "guest-1");
  ASSERT_EQ(doc["kinds"].size(), 1u);
  EXPECT_EQ(doc["kinds"][0]["kind"], "fake_down");
  EXPECT_EQ(doc["netdevs"], json::parse(R"([
    {"name": "eth0", "netns": "", "operstate": "up", "mac": "52:54:00:00:00:01"},
    {"name": "lo", "netns": "", "operstate": "unknown", "mac": "00:00:00:00:00:00"},
    {"name": "p0", "netns": "lab-sw0", "operstate": "lowerlayerdown",
     "mac": "02:00:00:00:00:10"}])"));
  EXPECT_EQ(doc["rdma_devices"], json::parse(R"([{"name": "rxe0", "ports": [
    {"port": 1, "state": "ACTIVE", "gid_table_size": 16}]}])"));
  // The shim-loaded programs, without their socket paths (those mean nothing off the host).
  EXPECT_EQ(doc["verbs_shims"], json::parse(R"([{"pid": 4242, "comm": "ib_write_bw", "rank": 1,
    "devices": ["rxe0"], "armed": []}])"));
  EXPECT_GE(doc["clock"]["steady_ns"].get<int64_t>(), before);
  EXPECT_GT(doc["clock"]["realtime_ns"].get<int64_t>(), 1'600'000'000'000'000'000);

  auto decoded = agentInfoFromJson(doc);
  ASSERT_TRUE(decoded.isOk()) << decoded.status().toString();
  EXPECT_EQ(decoded->hostname, "guest-1");
  ASSERT_EQ(decoded->netdevs.size(), 3u);
  EXPECT_EQ(decoded->netdevs[2].netns, "lab-sw0");
  ASSERT_EQ(decoded->rdma_devices.size(), 1u);
  EXPECT_EQ(decoded->rdma_devices[0].ports[0].gid_table_size, 16);
  ASSERT_EQ(decoded->verbs_shims.size(), 1u);
  EXPECT_EQ(decoded->verbs_shims[0].pid, 4242);
  EXPECT_EQ(decoded->verbs_shims[0].rank, std::optional<int>(1));
  EXPECT_EQ(decoded->clock.realtime_ns, doc["clock"]["realtime_ns"].get<int64_t>());

  EXPECT_EQ(call("POST", "/agent/v1/describe").status, 405);
  EXPECT_EQ(call("GET", "/agent/v1/describe", nullptr, "-").status, 401);
}

// GET /agent/v1/rdma/counters: the host's RDMA ports' hw_counters as the sysfs adapter read them,
// decoded by the controller; none without RDMA.
TEST_F(AgentServiceTest, RdmaCountersReportsEveryPortsHardwareCounters) {
  FixedRdmaDevices rdma;
  LocalAgentOptions options{"/bin/true", ""};
  options.rdma = &rdma;
  agent_ = std::make_unique<ScriptedAgent>(registry_, launcher_, options);
  service();
  auto response = call("GET", "/agent/v1/rdma/counters");
  ASSERT_EQ(response.status, 200) << response.body;
  const json doc = parse(response);
  EXPECT_EQ(doc["ports"], json::parse(R"([{"device": "rxe0", "port": 1,
    "counters": {"rcvd_seq_err": 2, "sent_pkts": 900}}])"));
  auto decoded = rdmaCountersFromJson(doc);
  ASSERT_TRUE(decoded.isOk()) << decoded.status().toString();
  ASSERT_EQ(decoded->size(), 1u);
  EXPECT_EQ((*decoded)[0].device, "rxe0");
  EXPECT_EQ((*decoded)[0].port, 1);
  using Counters = std::vector<std::pair<std::string, int64_t>>;
  EXPECT_EQ((*decoded)[0].counters, (Counters{{"rcvd_seq_err", 2}, {"sent_pkts", 900}}));
  EXPECT_EQ(call("POST", "/agent/v1/rdma/counters").status, 405);
  EXPECT_EQ(call("GET", "/agent/v1/rdma/counters", nullptr, "-").status, 401);

  service_.reset();  // it holds the agent
  agent_ =
      std::make_unique<ScriptedAgent>(registry_, launcher_, LocalAgentOptions{"/bin/true", ""});
  service();
  EXPECT_EQ(parse(call("GET", "/agent/v1/rdma/counters"))["ports"], json::array());
}

TEST(RdmaCountersJson, RefusesPortsWithoutNamesAndCountersThatAreNotIntegers) {
  EXPECT_TRUE(rdmaCountersFromJson(json::object())->empty());
  EXPECT_FALSE(rdmaCountersFromJson(json::array()).isOk());
  EXPECT_FALSE(rdmaCountersFromJson(json::parse(R"({"ports": [{"port": 1}]})")).isOk());
  EXPECT_FALSE(rdmaCountersFromJson(json::parse(R"({"ports": [{"device": "rxe0"}]})")).isOk());
  EXPECT_FALSE(rdmaCountersFromJson(json::parse(R"({"ports": [{"device": "rxe0", "port": 1,
                                  "counters": {"sent_pkts": "many"}}]})"))
                   .isOk());
}

TEST_F(AgentServiceTest, DescribeFallsBackToTheServicesVersionAndTheProbesHostname) {
  service();
  auto response = call("GET", "/agent/v1/describe");
  ASSERT_EQ(response.status, 200) << response.body;
  json doc = parse(response);
  EXPECT_EQ(doc["version"], "0.1.0-test");
  EXPECT_EQ(doc["hostname"], "vm-test-1");
  EXPECT_EQ(doc["netdevs"], json::array()) << "no links adapter, no netdevs";
}

TEST(AgentInfoJson, IgnoresUnknownFieldsAndRefusesWrongTypes) {
  auto ok = agentInfoFromJson(json{{"version", "1"}, {"from_the_future", 3}});
  ASSERT_TRUE(ok.isOk());
  EXPECT_EQ(ok->version, "1");
  EXPECT_FALSE(agentInfoFromJson(json{{"version", 1}}).isOk());
  EXPECT_FALSE(agentInfoFromJson(json{{"netdevs", "eth0"}}).isOk());
  EXPECT_FALSE(agentInfoFromJson(json::array()).isOk());
}

TEST(SysfsRdmaDevices, ReadsPortsStatesAndGidTableSizes) {
  TempDir dir;
  namespace fs = std::filesystem;
  auto write = [](const fs::path& path, const std::string& text) {
    fs::create_directories(path.parent_path());
    std::ofstream(path) << text;
  };
  const fs::path root = dir.path();
  for (int i = 0; i < 4; ++i) {
    write(root / "class/infiniband/rxe0/ports/1/gids" / std::to_string(i), "fe80::\n");
  }
  write(root / "class/infiniband/rxe0/ports/1/state", "4: ACTIVE\n");
  write(root / "class/infiniband/mlx5_0/ports/2/state", "1: DOWN\n");  // no gids directory
  write(root / "class/infiniband/mlx5_0/ports/1/state", "2: INIT\n");
  auto devices = sys::makeSysfsRdmaDevices(dir.path())->list();
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_EQ(devices[0].name, "mlx5_0");
  ASSERT_EQ(devices[0].ports.size(), 2u);
  EXPECT_EQ(devices[0].ports[0].port, 1);
  EXPECT_EQ(devices[0].ports[0].state, "INIT");
  EXPECT_EQ(devices[0].ports[1].state, "DOWN");
  EXPECT_EQ(devices[0].ports[1].gid_table_size, 0);
  EXPECT_EQ(devices[1].name, "rxe0");
  EXPECT_EQ(devices[1].ports[0].state, "ACTIVE");
  EXPECT_EQ(devices[1].ports[0].gid_table_size, 4);
  EXPECT_TRUE(sys::makeSysfsRdmaDevices(dir.path() + "/nowhere")->list().empty());
  EXPECT_EQ(sys::rdmaPortStateName("ACTIVE"), "ACTIVE");
  EXPECT_EQ(sys::rdmaPortStateName(" 4: ACTIVE\n"), "ACTIVE");
}

TEST(SysfsRdmaDevices, ReadsEveryPortsHardwareCountersByName) {
  TempDir dir;
  namespace fs = std::filesystem;
  auto write = [](const fs::path& path, const std::string& text) {
    fs::create_directories(path.parent_path());
    std::ofstream(path) << text;
  };
  const fs::path rxe = dir.path() + "/class/infiniband/rxe0/ports/1";
  write(rxe / "state", "4: ACTIVE\n");
  write(rxe / "hw_counters/sent_pkts", "77442\n");
  write(rxe / "hw_counters/rcvd_seq_err", "3\n");
  write(rxe / "hw_counters/lifespan", "10\n");                   // a setting, not a counter
  write(rxe / "hw_counters/garbled", "n/a\n");                   // not a number
  write(rxe / "hw_counters/too_big", "18446744073709551615\n");  // past int64
  const fs::path mlx = dir.path() + "/class/infiniband/mlx5_0/ports/1";
  write(mlx / "state", "4: ACTIVE\n");
  write(mlx / "hw_counters/np_cnp_sent", "12\n");
  write(mlx / "hw_counters/rp_cnp_handled", "0\n");
  write(dir.path() + "/class/infiniband/mlx5_0/ports/2/state", "1: DOWN\n");  // no hw_counters

  auto ports = sys::makeSysfsRdmaDevices(dir.path())->hwCounters();
  ASSERT_EQ(ports.size(), 2u);
  EXPECT_EQ(ports[0].device, "mlx5_0");
  EXPECT_EQ(ports[0].port, 1);
  using Counters = std::vector<std::pair<std::string, int64_t>>;
  EXPECT_EQ(ports[0].counters, (Counters{{"np_cnp_sent", 12}, {"rp_cnp_handled", 0}}));
  EXPECT_EQ(ports[1].device, "rxe0");
  EXPECT_EQ(ports[1].counters, (Counters{{"rcvd_seq_err", 3}, {"sent_pkts", 77442}}));
  EXPECT_TRUE(sys::makeSysfsRdmaDevices(dir.path() + "/nowhere")->hwCounters().empty());
}

TEST(SystemHostProbe, ReadsASysfsTreeAndToleratesGaps) {
  TempDir dir;
  namespace fs = std::filesystem;
  auto write = [](const fs::path& path, const std::string& text) {
    fs::create_directories(path.parent_path());
    std::ofstream(path) << text;
  };
  const fs::path root = dir.path();
  write(root / "class/net/eth1/address", "52:54:00:aa:bb:cc\n");
  write(root / "class/net/eth1/operstate", "up\n");
  write(root / "class/net/eth1/mtu", "9000\n");
  fs::create_directories(root / "class/net/eth0");  // nothing readable in it
  const fs::path port = root / "class/infiniband/rxe0/ports/1";
  write(port / "state", "4: ACTIVE\n");
  write(port / "gids/0", "fe80:0000:0000:0000:5054:00ff:feaa:bbcc\n");
  write(port / "gid_attrs/ndevs/0", "eth1\n");
  write(root / "class/infiniband/mlx5_0/ports/1/state", "1: DOWN\n");  // no gid_attrs

  auto probe = makeSystemHostProbe(dir.path());
  auto netdevs = probe->netdevs();
  ASSERT_EQ(netdevs.size(), 2u);
  EXPECT_EQ(netdevs[0].name, "eth0");
  EXPECT_EQ(netdevs[0].mtu, 0);
  EXPECT_EQ(netdevs[1].mac, "52:54:00:aa:bb:cc");
  EXPECT_EQ(netdevs[1].operstate, "up");
  EXPECT_EQ(netdevs[1].mtu, 9000);
  auto ports = probe->rdmaPorts();
  ASSERT_EQ(ports.size(), 2u);
  EXPECT_EQ(ports[0].name, "mlx5_0");
  EXPECT_EQ(ports[0].netdev, "");
  EXPECT_EQ(ports[1].name, "rxe0");
  EXPECT_EQ(ports[1].port, 1);
  EXPECT_EQ(ports[1].state, "4: ACTIVE");
  EXPECT_EQ(ports[1].gid, "fe80:0000:0000:0000:5054:00ff:feaa:bbcc");
  EXPECT_EQ(ports[1].netdev, "eth1");

  auto missing = makeSystemHostProbe(dir.path() + "/nowhere");
  EXPECT_TRUE(missing->netdevs().empty());
  EXPECT_TRUE(missing->rdmaPorts().empty());
  EXPECT_FALSE(missing->kernelRelease().empty());
}

}  // namespace
}  // namespace fabric_chaos::agent
