// LocalAgent: report lines become run-relative samples and events, ranks are started with the
// right arguments, and a real child's stdout is read to the end (a shell script stands in for
// the workload binary, so no root or namespace is needed). Serve's blast-radius guard: targets off
// the allowlist are refused before any adapter call, reverts are never blocked, and the allowlist
// is built from the registered fabrics (app/local_stack.h) over fake adapters.

#include "agent/local_agent.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>

#include "app/local_stack.h"
#include "core/clock.h"
#include "injectors/registry.h"
#include "injectors/sys/process.h"
#include "tests/fakes/fake_links.h"
#include "tests/fakes/fake_nftables.h"
#include "tests/fakes/fake_process.h"
#include "tests/fakes/fake_qdiscs.h"
#include "workload/report.h"

namespace fabric_chaos::agent {
namespace {

class RecordingListener : public WorkloadListener {
 public:
  void onSamples(const std::vector<core::Sample>& samples) override {
    std::lock_guard lock(mu);
    this->samples.insert(this->samples.end(), samples.begin(), samples.end());
  }
  void onEvent(int rank, double t_ms, const std::string& kind, const nlohmann::json&) override {
    std::lock_guard lock(mu);
    events.push_back({rank, t_ms, kind});
  }
  void onRankExit(int rank, int exit_code) override {
    std::lock_guard lock(mu);
    exits.push_back({rank, exit_code});
  }
  struct Event {
    int rank;
    double t_ms;
    std::string kind;
  };
  std::mutex mu;
  std::vector<core::Sample> samples;
  std::vector<Event> events;
  std::vector<std::pair<int, int>> exits;
};

TEST(DeliverReportLine, ConvertsSteadyNanosecondsToRunMilliseconds) {
  RecordingListener listener;
  const int64_t origin = 1'000'000'000;
  ASSERT_TRUE(deliverReportLine(
      workload::encodeSamples(2, {{7, origin + 2'500'000, 1'250'000, 4096}}), 2, origin, listener));
  ASSERT_EQ(listener.samples.size(), 1u);
  EXPECT_EQ(listener.samples[0].rank, 2);
  EXPECT_EQ(listener.samples[0].iteration, 7);
  EXPECT_DOUBLE_EQ(listener.samples[0].start_ms, 2.5);
  EXPECT_DOUBLE_EQ(listener.samples[0].duration_ms, 1.25);
  EXPECT_EQ(listener.samples[0].bytes, 4096);

  ASSERT_TRUE(deliverReportLine(workload::encodeReady(2, origin + 3'000'000), 2, origin, listener));
  ASSERT_TRUE(
      deliverReportLine(workload::encodeEvent(2, origin + 4'000'000, "reconnected", {{"epoch", 1}}),
                        2, origin, listener));
  ASSERT_EQ(listener.events.size(), 2u);
  EXPECT_EQ(listener.events[0].kind, "rank_ready");
  EXPECT_DOUBLE_EQ(listener.events[0].t_ms, 3.0);
  EXPECT_EQ(listener.events[1].kind, "reconnected");
}

TEST(DeliverReportLine, AMalformedLineBecomesABadReportEvent) {
  RecordingListener listener;
  EXPECT_FALSE(deliverReportLine("{not json", 0, 0, listener));
  ASSERT_EQ(listener.events.size(), 1u);
  EXPECT_EQ(listener.events[0].kind, "bad_report");
  EXPECT_TRUE(deliverReportLine("", 0, 0, listener));  // blank lines are ignored
}

TEST(LocalAgent, RankArgvCarriesTheWholeSpec) {
  RankSpec spec;
  spec.rank = 1;
  spec.world = 4;
  spec.listen_addr = "10.200.0.2";
  spec.port = 17001;
  spec.next_addr = "10.200.0.3";
  spec.next_port = 17001;
  spec.message_bytes = 262144;
  spec.compute_ms = 5;
  spec.max_duration_ms = 61500;
  auto argv = LocalAgent::rankArgv("/usr/bin/fabric-chaos", spec);
  const std::string joined = [&] {
    std::string s;
    for (const auto& a : argv) s += a + " ";
    return s;
  }();
  EXPECT_EQ(argv[0], "/usr/bin/fabric-chaos");
  EXPECT_EQ(argv[1], "workload");
  EXPECT_NE(joined.find("--rank 1 --world 4 "), std::string::npos) << joined;
  EXPECT_NE(joined.find("--listen 10.200.0.2:17001 --next 10.200.0.3:17001 "), std::string::npos);
  EXPECT_NE(joined.find("--bytes 262144 "), std::string::npos);
  EXPECT_NE(joined.find("--duration-s 62 "), std::string::npos);  // rounded up
}

TEST(LocalAgent, ARankOfAScenarioWithVerbsFaultsLoadsTheVerbsShim) {
  RankSpec spec;
  spec.rank = 2;
  spec.world = 3;
  spec.transport = "verbs";
  spec.verbs_shim = true;
  const auto argv = LocalAgent::rankArgv("/usr/bin/fabric-chaos", spec,
                                         {"/opt/fc/libfabric-chaos-verbs.so", "/run/fc/verbs"});
  ASSERT_GT(argv.size(), 5u);
  EXPECT_EQ(std::vector<std::string>(argv.begin(), argv.begin() + 6),
            (std::vector<std::string>{"/usr/bin/env", "LD_PRELOAD=/opt/fc/libfabric-chaos-verbs.so",
                                      "FABRIC_CHAOS_VERBS_DIR=/run/fc/verbs", "FABRIC_CHAOS_RANK=2",
                                      "/usr/bin/fabric-chaos", "workload"}));
  spec.verbs_shim = false;
  EXPECT_EQ(LocalAgent::rankArgv("/usr/bin/fabric-chaos", spec,
                                 {"/opt/fc/libfabric-chaos-verbs.so", "/run/fc/verbs"})[0],
            "/usr/bin/fabric-chaos")
      << "only ranks of scenarios that arm verbs faults carry the library";
}

TEST(LocalAgent, AnIbProbeRankRunsAttachedAtItsSimulatedNode) {
  RankSpec spec;
  spec.rank = 3;
  spec.world = 4;
  spec.transport = "ib_probe";
  spec.next_addr = "0x0000000000100001";
  spec.max_duration_ms = 61500;
  spec.ib_node = "h3";
  spec.ib_preload = "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so";
  spec.ib_dir = "/run/fc/ib/ib-lab";
  EXPECT_EQ(
      LocalAgent::rankArgv("/usr/bin/fabric-chaos", spec),
      (std::vector<std::string>{"/usr/bin/env", "-C", "/run/fc/ib/ib-lab", "SIM_HOST=h3",
                                "LD_PRELOAD=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so",
                                "/usr/bin/fabric-chaos", "ib-probe", "--rank", "3", "--peer-guid",
                                "0x0000000000100001", "--duration-s", "62"}));
  // On a real host the probe uses its own port: nothing is preloaded.
  spec.ib_node.clear();
  EXPECT_EQ(LocalAgent::rankArgv("/usr/bin/fabric-chaos", spec),
            (std::vector<std::string>{"/usr/bin/fabric-chaos", "ib-probe", "--rank", "3",
                                      "--peer-guid", "0x0000000000100001", "--duration-s", "62"}));
  // Rank 0 also reads the switches' routes, every 5 ms in the simulated lab and at the
  // probe's default pace on a real subnet.
  spec.rank = 0;
  EXPECT_EQ(
      LocalAgent::rankArgv("/usr/bin/fabric-chaos", spec),
      (std::vector<std::string>{"/usr/bin/fabric-chaos", "ib-probe", "--rank", "0", "--peer-guid",
                                "0x0000000000100001", "--duration-s", "62", "--check-routes"}));
  spec.ib_node = "h0";
  const auto lab = LocalAgent::rankArgv("/usr/bin/fabric-chaos", spec);
  EXPECT_EQ(std::vector<std::string>(lab.end() - 3, lab.end()),
            (std::vector<std::string>{"--check-routes", "--routes-period-ms", "5"}));
}

TEST(LocalAgent, ReadsEveryLineOfARealChildAndReportsItsExit) {
  char dir_template[] = "/tmp/fc-agent-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  const std::string script = dir + "/fake-workload";
  {
    std::ofstream out(script);
    // Ignores its arguments, reports like a rank, exits 3.
    out << "#!/bin/sh\n"
        << "echo '" << workload::encodeReady(0, core::steadyNowNs()) << "'\n"
        << "i=0; while [ $i -lt 50 ]; do\n"
        << "  echo '{\"type\":\"samples\",\"rank\":0,\"samples\":[['$i',1,1000000,64]]}'\n"
        << "  i=$((i+1)); done\n"
        << "exit 3\n";
  }
  std::filesystem::permissions(script, std::filesystem::perms::owner_all);
  auto registry = injectors::Registry();
  auto launcher = sys::makeForkExecLauncher();
  LocalAgent agent(registry, *launcher, {script, ""});
  RecordingListener listener;
  RankSpec spec;
  auto handle = agent.startWorkload({spec}, core::steadyNowNs(), &listener);
  ASSERT_TRUE(handle.isOk()) << handle.status().toString();
  for (int i = 0; i < 500; ++i) {
    {
      std::lock_guard lock(listener.mu);
      if (!listener.exits.empty()) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  (*handle)->stop(1000);
  std::lock_guard lock(listener.mu);
  EXPECT_EQ(listener.samples.size(), 50u);
  EXPECT_EQ(listener.samples.back().iteration, 49);
  ASSERT_EQ(listener.exits.size(), 1u);
  EXPECT_EQ(listener.exits[0], (std::pair<int, int>{0, 3}));
  std::filesystem::remove_all(dir);
}

TEST(LocalAgent, AMissingBinaryIsAClearError) {
  auto registry = injectors::Registry();
  auto launcher = sys::makeForkExecLauncher();
  LocalAgent agent(registry, *launcher, {"/nonexistent/fabric-chaos", ""});
  RecordingListener listener;
  auto handle = agent.startWorkload({RankSpec{}}, core::steadyNowNs(), &listener);
  ASSERT_FALSE(handle.isOk());
  EXPECT_NE(handle.status().message().find("starting workload rank 0"), std::string::npos)
      << handle.status().message();
}

TEST(LocalAgent, RanksThatMustLoadTheVerbsShimAreRefusedWithoutOneAndNoneStarts) {
  auto registry = injectors::Registry();
  fakes::FakeProcessLauncher launcher;
  LocalAgent agent(registry, launcher, {"/usr/bin/fabric-chaos", ""});
  RankSpec plain;
  RankSpec shimmed;
  shimmed.rank = 1;
  shimmed.verbs_shim = true;
  RecordingListener listener;
  auto handle = agent.startWorkload({plain, shimmed}, core::steadyNowNs(), &listener);
  ASSERT_FALSE(handle.isOk());
  EXPECT_EQ(handle.status().code(), core::StatusCode::kFailedPrecondition);
  EXPECT_NE(handle.status().message().find("rank 1 must load the verbs fault library"),
            std::string::npos)
      << handle.status().message();
  EXPECT_TRUE(launcher.spawned().empty()) << "refused before any rank started";
}

TEST(LocalAgent, ExternalWorkloadsRunOnlyWhereTheOperatorAllowedThem) {
  auto registry = injectors::Registry();
  fakes::FakeProcessLauncher launcher;
  RankSpec spec;
  spec.transport = "exec";
  spec.exec.command = {"/bin/true"};
  RecordingListener listener;
  {
    LocalAgent agent(registry, launcher, {"/usr/bin/fabric-chaos", ""});
    auto handle = agent.startWorkload({spec}, core::steadyNowNs(), &listener);
    ASSERT_FALSE(handle.isOk());
    EXPECT_EQ(handle.status().code(), core::StatusCode::kPermissionDenied);
    EXPECT_NE(handle.status().message().find("--allow-exec"), std::string::npos);
    EXPECT_TRUE(launcher.spawned().empty());
  }
  LocalAgentOptions options{"/usr/bin/fabric-chaos", ""};
  options.allow_exec = true;
  LocalAgent agent(registry, launcher, options);
  auto handle = agent.startWorkload({spec}, core::steadyNowNs(), &listener);
  ASSERT_TRUE(handle.isOk()) << handle.status().toString();
  ASSERT_EQ(launcher.spawned().size(), 1u);
  EXPECT_EQ(launcher.spawned()[0].argv[1], "exec-rank");
}

TEST(LocalAgent, AnExternalRankRunsUnderExecRankWithTheShimInItsCommandsEnvironment) {
  RankSpec spec;
  spec.rank = 1;
  spec.world = 2;
  spec.listen_addr = "10.0.0.2";
  spec.transport = "exec";
  spec.verbs_shim = true;
  spec.exec.command = {"ib_write_bw", "-d", "rxe0"};
  spec.exec.parser = {workload::StepFormat::kRegex, "^(?<duration_us>\\d+)$"};
  spec.exec.env = {"A=1"};
  spec.exec.master_addr = "10.0.0.1";
  spec.exec.master_port = 29500;
  spec.exec.ifname = "eth0";
  spec.exec.reports_steps = false;
  EXPECT_EQ(LocalAgent::rankArgv("/usr/bin/fabric-chaos", spec, {"/lib/shim.so", "/run/v"}),
            (std::vector<std::string>{"/usr/bin/fabric-chaos",
                                      "exec-rank",
                                      "--rank",
                                      "1",
                                      "--world",
                                      "2",
                                      "--master",
                                      "10.0.0.1:29500",
                                      "--format",
                                      "regex",
                                      "--silence-ms",
                                      "60000",
                                      "--host-addr",
                                      "10.0.0.2",
                                      "--ifname",
                                      "eth0",
                                      "--pattern",
                                      "^(?<duration_us>\\d+)$",
                                      "--no-steps",
                                      "--env",
                                      "A=1",
                                      "--env",
                                      "LD_PRELOAD=/lib/shim.so",
                                      "--env",
                                      "FABRIC_CHAOS_VERBS_DIR=/run/v",
                                      "--env",
                                      "FABRIC_CHAOS_RANK=1",
                                      "--",
                                      "ib_write_bw",
                                      "-d",
                                      "rxe0"}));
}

TEST(LocalAgent, UnknownKindsListTheValidOnes) {
  injectors::Registry registry;
  auto launcher = sys::makeForkExecLauncher();
  LocalAgent agent(registry, *launcher, {"/bin/true", ""});
  auto status = agent.validateFault("smoke", {});
  EXPECT_EQ(status.code(), core::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("unknown fault kind \"smoke\""), std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// The blast-radius guard (serve's embedded agent)

using core::Status;
using core::StatusCode;
using injectors::Fault;

class GuardedLocalAgent : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* ns : {"fcl-sw0", "fcl-extra"}) {
      links_.addLink(ns, {"p0", 0, true, true, ""});
      links_.addLink(ns, {"p1", 0, true, true, ""});
    }
    links_.addLink("", {"eth0", 0, true, true, ""});
    links_.addLink("", {"lo", 0, true, true, ""});
    registry_ = injectors::makeRegistry({&links_, &nft_, &qdiscs_});
  }

  std::unique_ptr<LocalAgent> make(std::vector<std::string>* allowed,
                                   std::vector<std::string> management = {"eth0", "lo"}) {
    LocalAgentOptions options;
    options.guard.allowed = [allowed] { return *allowed; };
    options.guard.management = std::move(management);
    return std::make_unique<LocalAgent>(*registry_, launcher_, options);
  }

  static Fault flap(const std::string& netns, const std::string& ifname) {
    return {"link_flap", injectors::InterfaceTarget{netns, ifname}, {{"down_ms", 1000}}};
  }

  // Every adapter call that could change the system: none may happen for a refused target.
  int mutations() const {
    return links_.mutatingCalls() + nft_.mutatingCalls() + qdiscs_.mutatingCalls();
  }

  fakes::FakeLinks links_;
  fakes::FakeNftables nft_;
  fakes::FakeQdiscs qdiscs_;
  fakes::FakeProcessLauncher launcher_;
  std::unique_ptr<injectors::Registry> registry_;
};

TEST_F(GuardedLocalAgent, AnInterfaceOffTheAllowlistIsRefusedAndNothingIsTouched) {
  std::vector<std::string> allowed{"fcl-sw0/p0", "fcl-sw0/p1"};
  auto agent = make(&allowed);
  const int before = mutations();
  const size_t link_calls = links_.calls().size();
  for (const Fault& fault : {flap("fcl-extra", "p0"), flap("", "p0"), flap("fcl-sw0", "p7")}) {
    auto capture = agent->captureFault(fault);
    ASSERT_FALSE(capture.isOk());
    EXPECT_EQ(capture.status().code(), StatusCode::kPermissionDenied);
    Status apply = agent->applyFault(fault);
    EXPECT_EQ(apply.code(), StatusCode::kPermissionDenied) << apply.toString();
    EXPECT_NE(apply.message().find("is not on this agent's allowlist (fcl-sw0/p0, fcl-sw0/p1)"),
              std::string::npos)
        << apply.message();
    EXPECT_NE(apply.message().find("--allow-interface or register a fabric"), std::string::npos);
  }
  // Not even read: the refusal comes before the injector.
  EXPECT_EQ(links_.calls().size(), link_calls);
  EXPECT_EQ(mutations(), before);
  EXPECT_TRUE(links_.link("fcl-extra", "p0")->admin_up);

  // The message names the initial namespace for a bare interface name.
  Status bare = agent->applyFault(flap("", "p0"));
  EXPECT_NE(bare.message().find("fault target p0 (initial namespace) is not on"), std::string::npos)
      << bare.message();

  // A listed target goes through.
  ASSERT_TRUE(agent->captureFault(flap("fcl-sw0", "p1")).isOk());
  ASSERT_TRUE(agent->applyFault(flap("fcl-sw0", "p1")).isOk());
  EXPECT_FALSE(links_.link("fcl-sw0", "p1")->admin_up);
  EXPECT_TRUE(links_.link("fcl-extra", "p1")->admin_up);
}

// The allowlist names interfaces; until fault families for other targets bring their own entries,
// the embedded agent refuses those targets before any injector runs.
TEST_F(GuardedLocalAgent, ATargetThatIsNotAnInterfaceIsRefusedAndNothingIsTouched) {
  std::vector<std::string> allowed{"fcl-sw0/p0"};
  auto agent = make(&allowed);
  const int before = mutations();
  const size_t link_calls = links_.calls().size();
  const Fault rdma{"link_flap", injectors::RdmaPortTarget{"rxe0", 1, 0}, {{"down_ms", 1000}}};
  auto capture = agent->captureFault(rdma);
  ASSERT_FALSE(capture.isOk());
  EXPECT_EQ(capture.status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(capture.status().message(),
            "fault target RDMA port rxe0:1 (gid 0) is refused: this agent does not act on RDMA "
            "ports (the host's own agent, fabric-chaos agent, does)");
  EXPECT_EQ(agent->applyFault(rdma).code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(
      agent->checkTarget(injectors::TrafficSetTarget{{{"fcl-sw0", "p0"}}, {{"fcl-sw0", "p9"}}})
          .code(),
      StatusCode::kPermissionDenied);
  // Revert skips the guard (recovery must always work), and the kind itself refuses the type.
  const Status reverted = agent->revertFault(rdma, nlohmann::json{{"admin_up", true}});
  EXPECT_EQ(reverted.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(reverted.message(), "link_flap acts on an interface, not on an rdma_port");
  EXPECT_EQ(links_.calls().size(), link_calls);
  EXPECT_EQ(mutations(), before);
}

TEST_F(GuardedLocalAgent, AnEmptyAllowlistAllowsNothing) {
  std::vector<std::string> allowed;
  auto agent = make(&allowed);
  Status s = agent->applyFault(flap("fcl-sw0", "p0"));
  EXPECT_EQ(s.code(), StatusCode::kPermissionDenied);
  EXPECT_NE(s.message().find("allowlist (empty)"), std::string::npos) << s.message();
  EXPECT_EQ(mutations(), 0);
}

TEST_F(GuardedLocalAgent, ManagementInterfacesAreRefusedEvenWhenListed) {
  std::vector<std::string> allowed{"eth0", "lo", "fcl-sw0/p0"};
  auto agent = make(&allowed);
  for (const char* name : {"eth0", "lo"}) {
    Status s = agent->applyFault(flap("", name));
    EXPECT_EQ(s.code(), StatusCode::kPermissionDenied) << name;
    EXPECT_NE(s.message().find("management interface"), std::string::npos) << s.message();
  }
  EXPECT_EQ(mutations(), 0);
  EXPECT_TRUE(links_.link("", "eth0")->admin_up);

  // The same name inside a namespace is another interface.
  allowed.push_back("fcl-sw0/lo");
  links_.addLink("fcl-sw0", {"lo", 0, true, true, ""});
  EXPECT_TRUE(agent->applyFault(flap("fcl-sw0", "lo")).isOk());

  // --allow-management-interface: no management list, so a listed eth0 is allowed.
  auto unguarded_mgmt = make(&allowed, {});
  EXPECT_TRUE(unguarded_mgmt->applyFault(flap("", "eth0")).isOk());
  EXPECT_FALSE(links_.link("", "eth0")->admin_up);
}

TEST_F(GuardedLocalAgent, RevertIsNeverBlockedSoOlderFaultsAreStillUndone) {
  std::vector<std::string> allowed{"fcl-sw0/p0"};
  auto agent = make(&allowed);
  auto prior = agent->captureFault(flap("fcl-sw0", "p0"));
  ASSERT_TRUE(prior.isOk());
  ASSERT_TRUE(agent->applyFault(flap("fcl-sw0", "p0")).isOk());
  ASSERT_FALSE(links_.link("fcl-sw0", "p0")->admin_up);

  // The lab that held it is gone from the list (or serve restarted with a narrower one): start-up
  // recovery must still bring the link back.
  allowed.clear();
  EXPECT_EQ(agent->applyFault(flap("fcl-sw0", "p0")).code(), StatusCode::kPermissionDenied);
  ASSERT_TRUE(agent->revertFault(flap("fcl-sw0", "p0"), *prior).isOk());
  EXPECT_TRUE(links_.link("fcl-sw0", "p0")->admin_up);
  // Observing is read-only and stays possible too.
  EXPECT_TRUE(agent->observeFault(flap("fcl-sw0", "p0")).isOk());
}

TEST_F(GuardedLocalAgent, TheListIsReadOnEveryCheckSoANewFabricIsSeenAtOnce) {
  std::vector<std::string> allowed;
  auto agent = make(&allowed);
  EXPECT_FALSE(agent->checkTarget(injectors::InterfaceTarget{"fcl-sw0", "p0"}).isOk());
  allowed.push_back("fcl-sw0/p0");
  EXPECT_TRUE(agent->checkTarget(injectors::InterfaceTarget{"fcl-sw0", "p0"}).isOk());
  allowed.clear();
  EXPECT_FALSE(agent->checkTarget(injectors::InterfaceTarget{"fcl-sw0", "p0"}).isOk());
}

TEST_F(GuardedLocalAgent, WithoutAGuardEverythingIsAllowed) {
  // `fabric-chaos agent`: its AgentService checks --allow before the LocalAgent is called.
  LocalAgent agent(*registry_, launcher_, {});
  EXPECT_TRUE(agent.checkTarget(injectors::InterfaceTarget{"", "eth0"}).isOk());
  EXPECT_TRUE(agent.applyFault(flap("fcl-extra", "p0")).isOk());
}

// The allowlist of serve, from the registered fabrics (app/local_stack.h).

scenarios::Fabric labFabric() {
  scenarios::Fabric fabric;
  fabric.name = "netns-lab";
  for (int i = 0; i < 2; ++i) {
    scenarios::Host host;
    host.name = "h" + std::to_string(i);
    host.netns = "fcl-h" + std::to_string(i);
    host.nics = {{"eth0", "10.200.0." + std::to_string(i + 1)}};
    fabric.hosts.push_back(host);
  }
  fabric.switches.push_back({"sw0", "fcl-sw0", "br0", {"p0", "p1"}, {}, std::nullopt});
  return fabric;
}

TEST(FabricFaultTargets, EveryLocalHostNicAndEverySwitchPort) {
  scenarios::Fabric vm;
  vm.name = "vm-lab";
  scenarios::Host guest;
  guest.name = "vm0";
  guest.netns = "";  // the guest's own namespace, not this machine's
  guest.agent = "http://127.0.0.1:7100";
  guest.nics = {{"eth1", "10.10.0.1"}};
  vm.hosts.push_back(guest);
  vm.switches.push_back({"sw0", "fcv-sw0", "br0", {"tap0", "p0"}, {}, std::nullopt});
  EXPECT_EQ(app::fabricFaultTargets({labFabric(), vm, labFabric()}),
            (std::vector<std::string>{"fcl-h0/eth0", "fcl-h1/eth0", "fcl-sw0/p0", "fcl-sw0/p1",
                                      "fcv-sw0/p0", "fcv-sw0/tap0"}));
  EXPECT_TRUE(app::fabricFaultTargets({}).empty());
}

TEST(FabricFaultTargets, ARealFabricsSwitchPortsAreNeverTheEmbeddedAgentsToTouch) {
  scenarios::Fabric real;
  real.name = "pod1";
  real.kind = "real";
  scenarios::Host gpu;
  gpu.name = "gpu001";
  gpu.agent = "https://10.0.0.11:7100";
  gpu.nics = {{"eth0", "192.168.0.11"}};
  real.hosts.push_back(gpu);
  // A switch port named like the controller's own NIC.
  real.switches.push_back({"leaf00", "", "", {"eth0", "Ethernet0"}, {}, std::nullopt});
  EXPECT_TRUE(app::fabricFaultTargets({real}).empty());
}

TEST(VerbsShimLibrary, FoundInTheBuildTreeOrTheInstalledPrefix) {
  char pattern[] = "/tmp/fc-shim-lookup-XXXXXX";
  ASSERT_NE(::mkdtemp(pattern), nullptr);
  const std::string root = pattern;
  std::filesystem::create_directories(root + "/build/app");
  std::filesystem::create_directories(root + "/build/verbs_shim");
  std::ofstream(root + "/build/verbs_shim/libfabric-chaos-verbs.so") << "";
  EXPECT_EQ(app::verbsShimLibraryFor(root + "/build/app/fabric-chaos"),
            root + "/build/verbs_shim/libfabric-chaos-verbs.so");
  std::filesystem::create_directories(root + "/usr/bin");
  std::filesystem::create_directories(root + "/usr/lib/fabric-chaos");
  EXPECT_EQ(app::verbsShimLibraryFor(root + "/usr/bin/fabric-chaos"), "");
  std::ofstream(root + "/usr/lib/fabric-chaos/libfabric-chaos-verbs.so") << "";
  EXPECT_EQ(app::verbsShimLibraryFor(root + "/usr/bin/fabric-chaos"),
            root + "/usr/lib/fabric-chaos/libfabric-chaos-verbs.so");
  std::filesystem::remove_all(root);
}

TEST(FabricFaultTargets, AnIbFabricListsItsPortsAndSmsByLockKey) {
  scenarios::Fabric ib;
  ib.name = "ib-lab";
  ib.kind = "ib";
  scenarios::Host h0;
  h0.name = "h0";
  h0.netns = "fcib-subnet";
  h0.nics = {{"port1", ""}};
  ib.hosts.push_back(h0);
  ib.switches.push_back({"l0", "fcib-subnet", "", {"1", "3"}, {}, std::nullopt});
  ib.links.push_back({"h0-l0", "h0", "port1", "l0", "1", {}});
  ib.ib = scenarios::IbFabric{{{"sm0", "h0", 14, "0x0000000000100001", ""}},
                              scenarios::IbSimulator{"fcib-subnet", "/x/console", "/x.so", "/x"}};
  EXPECT_EQ(app::fabricFaultTargets({ib, labFabric()}),
            (std::vector<std::string>{"fcl-h0/eth0", "fcl-h1/eth0", "fcl-sw0/p0", "fcl-sw0/p1",
                                      "ib/fcib-subnet/h0/1", "ib/fcib-subnet/l0/1",
                                      "ib/fcib-subnet/l0/3", "sm/node/h0/fcib-subnet"}));
}

TEST(ParseInterfaceList, NamespacedAndInitialNamespaceEntries) {
  auto list = app::parseInterfaceList("fcl-extra/veth0, eth2,,ns/x");
  ASSERT_TRUE(list.isOk()) << list.status().toString();
  EXPECT_EQ(*list, (std::vector<std::string>{"fcl-extra/veth0", "eth2", "ns/x"}));
  EXPECT_TRUE(app::parseInterfaceList("")->empty());
  for (const char* bad : {"/eth0", "ns/", "a/b/c", "ns/averyveryverylongname", "e th0"}) {
    auto parsed = app::parseInterfaceList(bad);
    ASSERT_FALSE(parsed.isOk()) << bad;
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(parsed.status().message().find("--allow-interface"), std::string::npos);
  }
}

TEST(ServeManagementInterfaces, LoopbackDefaultRouteAndTheListenInterface) {
  const std::string route =
      "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
      "ens3\t00000000\t0102A8C0\t0003\t0\t0\t100\t00000000\t0\t0\t0\n"
      "ens4\t0002A8C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n";
  std::vector<NetdevInfo> netdevs{{"lo", "127.0.0.1", "", "unknown", 65536},
                                  {"ens3", "192.168.2.10", "", "up", 1500},
                                  {"ens4", "192.168.0.7", "", "up", 1500}};
  EXPECT_EQ(app::serveManagementInterfaces("127.0.0.1", route, netdevs),
            (std::vector<std::string>{"ens3", "lo"}));
  EXPECT_EQ(app::serveManagementInterfaces("192.168.0.7", route, netdevs),
            (std::vector<std::string>{"ens3", "ens4", "lo"}));
  EXPECT_EQ(app::serveManagementInterfaces("0.0.0.0", "", netdevs),
            (std::vector<std::string>{"lo"}));
}

class FixedCatalog : public scenarios::FabricCatalog {
 public:
  std::vector<scenarios::Fabric> list() override { return fabrics; }
  core::Result<scenarios::Fabric> get(const std::string& name) override {
    for (const auto& f : fabrics) {
      if (f.name == name) return f;
    }
    return Status(StatusCode::kNotFound, name);
  }
  std::vector<scenarios::Fabric> fabrics;
};

TEST(ServeTargetGuard, FabricsPlusExtraInterfacesReadLive) {
  FixedCatalog catalog;
  TargetGuard guard = app::makeServeTargetGuard(catalog, {"127.0.0.1", {"fcl-extra/v0"}, false});
  ASSERT_TRUE(guard.allowed);
  EXPECT_EQ(guard.allowed(), (std::vector<std::string>{"fcl-extra/v0"}));
  catalog.fabrics.push_back(labFabric());
  auto allowed = guard.allowed();
  EXPECT_EQ(allowed.size(), 5u);
  EXPECT_NE(std::find(allowed.begin(), allowed.end(), "fcl-sw0/p1"), allowed.end());
  EXPECT_NE(std::find(allowed.begin(), allowed.end(), "fcl-extra/v0"), allowed.end());
  // This machine's loopback always carries serve's own connections.
  EXPECT_NE(std::find(guard.management.begin(), guard.management.end(), "lo"),
            guard.management.end());
  EXPECT_TRUE(app::makeServeTargetGuard(catalog, {"127.0.0.1", {}, true}).management.empty());
}

// A catalog that can tell when it changed: the guard builds its list once per version.
class VersionedCatalog : public FixedCatalog {
 public:
  std::vector<scenarios::Fabric> list() override {
    ++lists;
    return FixedCatalog::list();
  }
  std::optional<uint64_t> version() override { return current_version; }
  uint64_t current_version = 1;
  int lists = 0;
};

TEST(ServeTargetGuard, KeepsItsListUntilTheCatalogVersionMoves) {
  VersionedCatalog catalog;
  TargetGuard guard = app::makeServeTargetGuard(catalog, {"127.0.0.1", {"fcl-extra/v0"}, true});
  EXPECT_EQ(guard.allowed(), (std::vector<std::string>{"fcl-extra/v0"}));
  EXPECT_EQ(guard.allowed(), (std::vector<std::string>{"fcl-extra/v0"}));
  EXPECT_EQ(catalog.lists, 1) << "the same version: the list is kept";

  catalog.fabrics.push_back(labFabric());
  catalog.current_version = 2;
  auto allowed = guard.allowed();
  EXPECT_EQ(catalog.lists, 2);
  EXPECT_EQ(allowed.size(), 5u);
  EXPECT_NE(std::find(allowed.begin(), allowed.end(), "fcl-sw0/p1"), allowed.end());

  catalog.fabrics.clear();
  catalog.current_version = 3;
  EXPECT_EQ(guard.allowed(), (std::vector<std::string>{"fcl-extra/v0"})) << "a lab went down";
}

}  // namespace
}  // namespace fabric_chaos::agent
