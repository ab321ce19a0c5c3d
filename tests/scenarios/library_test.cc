// The built-in scenarios in scenarios/library/ must parse, validate against a 4-host netns fabric
// and plan to the timings docs/scenarios.md promises.

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "ib/ibnetdiscover.h"
#include "injectors/model/kind_spec.h"
#include "lab/ib_lab_plan.h"
#include "lab/leaf_spine.h"
#include "scenarios/model.h"
#include "scenarios/plan.h"
#include "scenarios/topology.h"
#include "scenarios/validate.h"

namespace fabric_chaos::scenarios {
namespace {

using core::Status;
using core::StatusCode;
using nlohmann::json;
namespace fs = std::filesystem;

fs::path libraryDir() {
  if (const char* source = std::getenv("FC_SOURCE_DIR"); source != nullptr && *source != '\0') {
    return fs::path(source) / "scenarios" / "library";
  }
  // Run by hand from the source tree, the build dir or the test's own build subdirectory.
  for (const char* up : {".", "..", "../..", "../../.."}) {
    const fs::path candidate = fs::path(up) / "scenarios" / "library";
    if (fs::exists(candidate / "link-flap.json")) return candidate;
  }
  return fs::path("scenarios") / "library";
}

json readJson(const fs::path& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot open " << path << " (set FC_SOURCE_DIR to the source tree)";
  json doc = json::parse(in, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(doc.is_discarded()) << path << " is not valid JSON";
  return doc;
}

// What `fabric-chaos lab up` describes: h0..h3, each eth0 cabled to a port of sw0.
Fabric netnsLab() {
  Fabric fabric;
  fabric.name = "netns-lab";
  fabric.kind = "netns";
  Switch sw{"sw0", "fcl-sw0", "br0", {}, {{"role", "leaf"}}, std::nullopt};
  for (int i = 0; i < 4; ++i) {
    const std::string name = "h" + std::to_string(i);
    fabric.hosts.push_back(Host{name,
                                "fcl-" + name,
                                "local",
                                {{"eth0", "10.200.0." + std::to_string(i + 1)}},
                                {{"rack", "r" + std::to_string(i / 2)}, {"leaf", "sw0"}},
                                ""});
    sw.ports.push_back("p" + std::to_string(i));
    fabric.links.push_back({name + "-sw0", name, "eth0", "sw0", "p" + std::to_string(i), {}});
  }
  fabric.switches.push_back(sw);
  return fabric;
}

// What `fabric-chaos lab up --with-slurm` describes: the same hosts, and the cluster they make.
Fabric slurmLab() {
  Fabric fabric = netnsLab();
  SlurmCluster slurm;
  slurm.conf = "/run/fabric-chaos/slurm/netns-lab/slurm.conf";
  slurm.submit_netns = "fcl-slurmctl";
  slurm.partition = "lab";
  fabric.slurm = slurm;
  return fabric;
}

// What `fabric-chaos lab up --kind ib` registers, from a recorded discovery of the lab's subnet
// (leaves l0, l1, spine s0, HCAs h0-h3, sm0 on h0 and sm1 on h2).
Fabric ibLab() {
  std::ifstream in(std::string(FC_IB_FIXTURES) + "/ibnetdiscover-fat-tree-2x1x2.txt");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  lab::IbLabOptions options;
  options.shape = {2, 1, 2, 8};
  auto subnet = ib::parseIbnetdiscover(text);
  EXPECT_TRUE(subnet.isOk()) << subnet.status().toString();
  auto fabric = lab::describeIbLab(options, *subnet);
  EXPECT_TRUE(fabric.isOk()) << fabric.status().toString();
  return *fabric;
}

// What `fabric-chaos lab up --kind vm --hosts 2` describes: vm0, vm1 behind remote agents.
Fabric vmLab() {
  Fabric fabric;
  fabric.name = "vm-lab";
  fabric.kind = "vm";
  Switch sw{"sw0", "fcv-sw0", "br0", {}, {}, std::nullopt};
  for (int i = 0; i < 2; ++i) {
    const std::string name = "vm" + std::to_string(i);
    fabric.hosts.push_back(Host{name,
                                "",
                                "http://127.0.0.1:710" + std::to_string(i),
                                {{"eth0", "10.201.0." + std::to_string(i + 1)}},
                                {{"rack", "r0"}},
                                "/run/fabric-chaos/vm/agent.token"});
    sw.ports.push_back("fcv-tap" + std::to_string(i));
    fabric.links.push_back({name + "-sw0", name, "eth0", "sw0", "fcv-tap" + std::to_string(i), {}});
  }
  fabric.switches.push_back(sw);
  return fabric;
}

// What `lab up --topology leaf-spine --hosts-per-leaf 3` describes: h0..h2 on l0, h3..h5 on l1.
Fabric leafSpineLab() {
  return lab::describeLeafSpine("netns-lab", "fcl", lab::LeafSpineShape{2, 2, 3, 1});
}

// The built-ins written for the leaf-spine lab.
const std::set<std::string> kLeafSpineScenarios = {"hot-spot-uplink", "pfc-storm-spread"};

// Every declared kind, with the parameters checked against its declaration, as the agent's
// validation starts: the library cannot use a parameter the kinds do not declare.
KindCatalog catalog() {
  KindCatalog catalog;
  for (const injectors::KindSpec* spec : injectors::kindSpecs())
    catalog.kinds.push_back(spec->kind);
  catalog.validate_params = [](const std::string& kind, const json& params) {
    const injectors::KindSpec* spec = injectors::findKindSpec(kind);
    if (spec == nullptr) return Status(StatusCode::kInvalidArgument, kind + ": unknown kind");
    return injectors::checkParams(*spec, params);
  };
  return catalog;
}

Scenario load(const std::string& file) {
  auto parsed = parseScenario(readJson(libraryDir() / file));
  EXPECT_TRUE(parsed.isOk()) << file << ": " << parsed.status().toString();
  return parsed.isOk() ? parsed.value() : Scenario{};
}

TEST(LibraryTest, EveryFileParsesValidatesAndIsNamedAfterItsFile) {
  const fs::path dir = libraryDir();
  ASSERT_TRUE(fs::is_directory(dir)) << dir << " not found; set FC_SOURCE_DIR";
  std::set<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    SCOPED_TRACE(entry.path().string());
    auto parsed = parseScenario(readJson(entry.path()));
    ASSERT_TRUE(parsed.isOk()) << parsed.status().toString();
    EXPECT_EQ(parsed->name, entry.path().stem().string());
    EXPECT_FALSE(parsed->description.empty());
    // Each scenario is checked against the lab it is written for.
    const bool through_slurm = parsed->workload.kind != WorkloadKind::kRing &&
                               parsed->workload.exec.launcher == WorkloadLauncher::kSlurm;
    const Fabric fabric = parsed->fabric == "vm-lab"                    ? vmLab()
                          : parsed->fabric == "ib-lab"                  ? ibLab()
                          : kLeafSpineScenarios.count(parsed->name) > 0 ? leafSpineLab()
                          : through_slurm                               ? slurmLab()
                                                                        : netnsLab();
    if (through_slurm) {
      // Without a cluster in the fabric it is refused when submitted, saying what is missing.
      const Status refused = validateForFabric(parsed.value(), netnsLab(), catalog());
      EXPECT_EQ(refused.code(), core::StatusCode::kUnprocessable);
      EXPECT_NE(refused.message().find("no Slurm cluster"), std::string::npos) << refused.message();
    }
    EXPECT_TRUE(parsed->fabric.empty() || parsed->fabric == fabric.name) << parsed->fabric;
    Status st = validateForFabric(parsed.value(), fabric, catalog());
    EXPECT_TRUE(st.isOk()) << st.toString();
    EXPECT_TRUE(planFaults(parsed.value(), fabric).isOk());
    names.insert(parsed->name);
  }
  EXPECT_TRUE(names.count("link-flap"));
  for (const char* ib : {"sm-failover-kill", "sm-port-down", "ib-spine-link-down", "ib-mad-loss"}) {
    EXPECT_TRUE(names.count(ib)) << ib;
  }
  EXPECT_TRUE(names.count("packet-loss"));
  EXPECT_TRUE(names.count("netem-delay"));
  EXPECT_TRUE(names.count("roce-loss"));
  EXPECT_TRUE(names.count("incast-4to1"));
  EXPECT_TRUE(names.count("hot-spot-uplink"));
  EXPECT_TRUE(names.count("pfc-storm"));
  EXPECT_TRUE(names.count("pfc-storm-intermittent"));
  EXPECT_TRUE(names.count("pfc-storm-watchdog-drop"));
  EXPECT_TRUE(names.count("pfc-storm-watchdog-forward"));
  EXPECT_TRUE(names.count("pfc-disabled-on-host"));
  EXPECT_TRUE(names.count("pfc-storm-roce"));
  EXPECT_TRUE(names.count("pfc-storm-spread"));
  for (const char* verbs : {"verbs-cqe-error", "gid-change", "rdma-device-reset"}) {
    EXPECT_TRUE(names.count(verbs)) << verbs;
  }
}

TEST(LibraryTest, VerbsAndRdmaDeviceScenariosActOnRank1sMachineUnderAVerbsRing) {
  struct Expected {
    const char* file;
    std::vector<std::pair<std::string, injectors::Target>> actions;  // kind, target
  };
  injectors::ProcessTarget rank1;
  rank1.rank = 1;
  const Expected expected[] = {
      {"verbs-cqe-error.json", {{"verbs_cqe_error", rank1}}},
      {"gid-change.json", {{"rdma_gid_change", injectors::RdmaPortTarget{"rxe0", 1, 0}}}},
      {"rdma-device-reset.json",
       {{"verbs_qp_error", rank1}, {"rdma_port_down", injectors::RdmaPortTarget{"rxe0", 1, 0}}}},
  };
  // The reset's port goes down 300 ms after its QPs failed, whichever order the agent would
  // apply two faults of one instant in (docs/verbs-faults.md says why that order).
  const std::vector<std::pair<int64_t, int64_t>> windows[] = {
      {{0, 2000}}, {{0, 2000}}, {{0, 2000}, {300, 2000}}};
  for (size_t n = 0; n < std::size(expected); ++n) {
    const Expected& e = expected[n];
    SCOPED_TRACE(e.file);
    const Scenario s = load(e.file);
    EXPECT_EQ(s.fabric, "vm-lab");
    EXPECT_EQ(s.workload.transport, "verbs");
    auto plan = planFaults(s, vmLab());
    ASSERT_TRUE(plan.isOk()) << plan.status().toString();
    ASSERT_EQ(plan->size(), e.actions.size());
    for (size_t i = 0; i < e.actions.size(); ++i) {
      EXPECT_EQ((*plan)[i].kind, e.actions[i].first);
      EXPECT_EQ((*plan)[i].target.target, e.actions[i].second);
      EXPECT_EQ((*plan)[i].target.host, vmLab().hosts[1].name);
      EXPECT_EQ((*plan)[i].apply_at_ms, windows[n][i].first);
      EXPECT_EQ((*plan)[i].revert_at_ms, windows[n][i].second);
    }
  }
}

TEST(LibraryTest, PfcStormsPauseTheLosslessPriorityOfH1WithTheRingInThatClass) {
  for (const char* file : {"pfc-storm.json", "pfc-storm-intermittent.json"}) {
    const Scenario s = load(file);
    ASSERT_EQ(s.steps.size(), 1u);
    EXPECT_EQ(s.steps[0].kind, "pfc_storm");
    EXPECT_EQ(s.workload.dscp, 26) << "the ring must be in the lossless class the storm pauses";
    EXPECT_EQ(s.steps[0].params.at("priorities"), nlohmann::json::array({3}));
    auto plan = planFaults(s, netnsLab());
    ASSERT_TRUE(plan.isOk()) << plan.status().toString();
    ASSERT_EQ(plan->size(), 1u);
    EXPECT_EQ(injectors::describe((*plan)[0].target.target), "fcl-h1/eth0");
  }
}

// The watchdog is set on h1's switch port before the storm starts and taken away after it ends.
TEST(LibraryTest, WatchdogScenariosWrapTheStormInTheWatchdogOfH1sSwitchPort) {
  for (const char* action : {"drop", "forward"}) {
    const Scenario s = load(std::string("pfc-storm-watchdog-") + action + ".json");
    ASSERT_EQ(s.steps.size(), 2u);
    EXPECT_EQ(s.workload.dscp, 26);
    EXPECT_EQ(s.steps[0].kind, "pfc_watchdog");
    EXPECT_EQ(s.steps[0].params.at("action"), action);
    EXPECT_EQ(s.steps[1].kind, "pfc_storm");
    EXPECT_LT(s.steps[0].at_ms, s.steps[1].at_ms);
    EXPECT_GT(s.steps[0].at_ms + s.steps[0].duration_ms, s.steps[1].at_ms + s.steps[1].duration_ms);
    auto plan = planFaults(s, netnsLab());
    ASSERT_TRUE(plan.isOk()) << plan.status().toString();
    ASSERT_EQ(plan->size(), 2u);
    std::set<std::string> targets;
    for (const auto& planned : *plan) targets.insert(injectors::describe(planned.target.target));
    EXPECT_EQ(targets, (std::set<std::string>{"fcl-sw0/p1", "fcl-h1/eth0"}));
  }
}

TEST(LibraryTest, PfcStormRocePutsTheVerbsRingInTheLosslessClassOnTheVmLab) {
  const Scenario s = load("pfc-storm-roce.json");
  EXPECT_EQ(s.fabric, "vm-lab");
  EXPECT_EQ(s.workload.transport, "verbs");
  EXPECT_EQ(s.workload.dscp, 26);
  auto plan = planFaults(s, vmLab());
  ASSERT_TRUE(plan.isOk()) << plan.status().toString();
  ASSERT_EQ(plan->size(), 1u);
  EXPECT_EQ((*plan)[0].kind, "pfc_storm");
}

TEST(LibraryTest, PfcDisabledOnHostTakesPfcOffH1sSwitchPortWhileH1PausesAndDrops) {
  const Scenario s = load("pfc-disabled-on-host.json");
  ASSERT_EQ(s.steps.size(), 3u);
  EXPECT_EQ(s.steps[0].kind, "pfc_config");
  EXPECT_EQ(s.steps[0].params.at("disable"), nlohmann::json::array({3}));
  EXPECT_EQ(s.steps[1].kind, "pfc_storm");
  EXPECT_EQ(s.steps[2].kind, "packet_loss");
  auto plan = planFaults(s, netnsLab());
  ASSERT_TRUE(plan.isOk()) << plan.status().toString();
}

TEST(LibraryTest, HotSpotUplinkSteersElephantsFromH2ToH5OverOneOfL0sUplinks) {
  const Scenario s = load("hot-spot-uplink.json");
  ASSERT_EQ(s.steps.size(), 1u);
  EXPECT_EQ(s.steps[0].kind, "hot_spot");
  auto plan = planFaults(s, leafSpineLab());
  ASSERT_TRUE(plan.isOk()) << plan.status().toString();
  ASSERT_EQ(plan->size(), 1u);
  EXPECT_EQ(injectors::describe((*plan)[0].target.target),
            "traffic from fcl-h2/eth0 to fcl-h5/eth0 via fcl-l0/up0 or fcl-l0/up1");
  // On the default star lab it is refused at submission: there is no uplink to aim at.
  EXPECT_FALSE(planFaults(s, netnsLab()).isOk());
}

// Written for `lab up --topology leaf-spine --leaves 2 --spines 1 --hosts-per-leaf 2`: the
// storming host is no ring member but shares a leaf with one, and the lossless incast that fills
// its paused port comes from a ring member behind the other leaf.
TEST(LibraryTest, PfcStormSpreadStormsAHostOutsideTheJobBehindALeafItUses) {
  const Scenario s = load("pfc-storm-spread.json");
  const Fabric fabric = lab::describeLeafSpine("netns-lab", "fcl", lab::LeafSpineShape{2, 1, 2, 1});
  ASSERT_EQ(s.steps.size(), 2u);
  EXPECT_EQ(s.workload.dscp, 26);
  EXPECT_EQ(s.workload.hosts, (std::vector<std::string>{"h0", "h1", "h2"}));
  EXPECT_EQ(s.steps[0].kind, "incast");
  EXPECT_EQ(s.steps[0].params.at("dscp"), 26) << "the incast must fill the paused class";
  EXPECT_EQ(s.steps[1].kind, "pfc_storm");
  // The storm starts after the incast's flows are up, and ends before them.
  EXPECT_GT(s.steps[1].at_ms, s.steps[0].at_ms);
  EXPECT_LT(s.steps[1].at_ms + s.steps[1].duration_ms, s.steps[0].at_ms + s.steps[0].duration_ms);
  auto plan = planFaults(s, fabric);
  ASSERT_TRUE(plan.isOk()) << plan.status().toString();
  ASSERT_EQ(plan->size(), 2u);
  EXPECT_EQ(injectors::describe((*plan)[0].target.target),
            "traffic from fcl-h1/eth0 to fcl-h3/eth0");
  EXPECT_EQ(injectors::describe((*plan)[1].target.target), "fcl-h3/eth0");
  auto leafOf = [&](const std::string& host) {
    for (const Host& h : fabric.hosts) {
      if (h.name == host) return h.labels.at("leaf");
    }
    return std::string();
  };
  EXPECT_EQ(leafOf("h3"), leafOf("h2"));
  EXPECT_NE(leafOf("h3"), leafOf("h1"));
}

TEST(LibraryTest, Incast4to1SendsFromEveryOtherHostIntoH3) {
  const Scenario s = load("incast-4to1.json");
  ASSERT_EQ(s.steps.size(), 1u);
  EXPECT_EQ(s.steps[0].kind, "incast");
  EXPECT_TRUE(s.steps[0].target.sources.empty()) << "every other host of the lab sends";
  EXPECT_EQ(s.workload.hosts, (std::vector<std::string>{"h0", "h1", "h2", "h3"}));
  auto plan = planFaults(s, netnsLab());
  ASSERT_TRUE(plan.isOk()) << plan.status().toString();
  ASSERT_EQ(plan->size(), 1u);
  EXPECT_EQ(injectors::describe((*plan)[0].target.target),
            "traffic from fcl-h0/eth0, fcl-h1/eth0, fcl-h2/eth0 to fcl-h3/eth0");
  EXPECT_EQ((*plan)[0].target.other_hosts, (std::vector<std::string>{"h0", "h1", "h2"}));
}

void expectCommonWorkload(const Scenario& s) {
  EXPECT_EQ(s.workload.transport, "tcp");
  EXPECT_TRUE(s.workload.hosts.empty());  // every host of the fabric
  EXPECT_EQ(s.workload.message_bytes, 262144);
  EXPECT_EQ(s.workload.compute_ms, 5);
  EXPECT_EQ(s.baseline_ms, 3000);
  EXPECT_EQ(s.recovery_ms, 5000);
  ASSERT_EQ(s.steps.size(), 1u);
  EXPECT_EQ(s.steps[0].target.host, "h1");
  EXPECT_EQ(s.steps[0].target.side, LinkSide::kSwitch);
  EXPECT_EQ(s.steps[0].at_ms, 0);
  EXPECT_EQ(s.gates.min_score, 20.0);
  EXPECT_TRUE(s.gates.require_survival);
}

TEST(LibraryTest, LinkFlap) {
  const Scenario s = load("link-flap.json");
  expectCommonWorkload(s);
  ASSERT_EQ(s.steps.size(), 1u);
  EXPECT_EQ(s.steps[0].kind, "link_flap");
  EXPECT_EQ(s.steps[0].params, json({{"down_ms", 1000}, {"up_ms", 1000}, {"count", 2}}));
  EXPECT_EQ(s.plannedDurationMs(), 3000 + 3000 + 5000);

  auto plan = planFaults(s, netnsLab());
  ASSERT_TRUE(plan.isOk()) << plan.status().toString();
  ASSERT_EQ(plan->size(), 2u);
  EXPECT_EQ((*plan)[0].apply_at_ms, 0);
  EXPECT_EQ((*plan)[0].revert_at_ms, 1000);
  EXPECT_EQ((*plan)[1].apply_at_ms, 2000);
  EXPECT_EQ((*plan)[1].revert_at_ms, 3000);
  EXPECT_EQ((*plan)[0].target.target,
            injectors::Target(injectors::InterfaceTarget{"fcl-sw0", "p1"}));
}

TEST(LibraryTest, PacketLoss) {
  const Scenario s = load("packet-loss.json");
  expectCommonWorkload(s);
  ASSERT_EQ(s.steps.size(), 1u);
  EXPECT_EQ(s.steps[0].kind, "packet_loss");
  EXPECT_EQ(s.steps[0].duration_ms, 4000);
  // Egress of h1's switch port: what netem and nftables both do, and silent to the sender.
  EXPECT_EQ(s.steps[0].params, json({{"percent", 5}, {"direction", "egress"}}));
  EXPECT_EQ(s.plannedDurationMs(), 3000 + 4000 + 5000);

  auto plan = planFaults(s, netnsLab());
  ASSERT_TRUE(plan.isOk()) << plan.status().toString();
  ASSERT_EQ(plan->size(), 1u);
  EXPECT_EQ((*plan)[0].apply_at_ms, 0);
  EXPECT_EQ((*plan)[0].revert_at_ms, 4000);
  EXPECT_EQ(injectors::describe((*plan)[0].target.target), "fcl-sw0/p1");
}

// Every complete scenario shown in docs/scenarios.md must be accepted as documented.
TEST(LibraryTest, DocumentedExamplesAreValid) {
  const fs::path doc_path = libraryDir() / ".." / ".." / "docs" / "scenarios.md";
  std::ifstream in(doc_path);
  ASSERT_TRUE(in.good()) << "cannot open " << doc_path;
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  int checked = 0;
  for (size_t pos = text.find("```json\n"); pos != std::string::npos;
       pos = text.find("```json\n", pos)) {
    pos += 8;
    const size_t end = text.find("```", pos);
    ASSERT_NE(end, std::string::npos);
    const json doc = json::parse(text.substr(pos, end - pos), nullptr, false);
    pos = end + 3;
    if (!doc.is_object() || !doc.contains("version")) continue;  // a fragment, not a scenario
    auto parsed = parseScenario(doc);
    ASSERT_TRUE(parsed.isOk()) << parsed.status().toString() << "\n" << doc.dump(2);
    Status st = validateForFabric(parsed.value(), netnsLab(), catalog());
    EXPECT_TRUE(st.isOk()) << st.toString() << "\n" << doc.dump(2);
    ++checked;
  }
  EXPECT_GE(checked, 2);
}

}  // namespace
}  // namespace fabric_chaos::scenarios
