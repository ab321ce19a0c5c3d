// A PFC storm against the verbs ring over Soft-RoCE, end to end through the REST API: a VM lab of
// two Debian 6.12 guests (`lab up --kind vm --hosts 2 --link-rate 100mbit --pfc`), each running
// this binary as its agent, the verbs ring on vm0 and vm1, and vm1's NIC storming priority 3 for
// 3 s from inside its guest (pfc_storm, the emitter run by vm1's agent).
// Observed from outside the product, by dumpcap on vm1's switch port (fcv-tap1, in the switch's
// namespace), read back with tshark after the run:
// - the 802.1Qbb frames vm1 sent, and their class-enable vector;
// - the ring's RoCEv2 packets towards vm1: their DSCP (26 when the scenario asks for it, so the
//   verbs ring really sets its traffic class) and the longest silence between two of them, which
//   is the pause when the ring is in the lossless class and nothing of the kind when it is not.
// The run's own account (retained busbw, the paused queue from the switch telemetry) is checked
// against them. Two runs on one lab: DSCP 26, then the best-effort control.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>
#include <tuple>

#include "tests/privileged/support.h"
#include "tests/vm/vm_support.h"

namespace fabric_chaos::testing {
namespace {

using nlohmann::json;

constexpr char kVm1Address[] = "10.201.0.2";

// What dumpcap caught on a port, decoded by tshark.
struct Capture {
  int pfc_frames = 0;
  int pfc_class_enable = -1;  // of the last frame
  int roce_to_vm1 = 0;
  std::vector<int> dscps;    // distinct DSCPs of the ring's RoCEv2 packets to vm1 (not QP 1)
  double longest_gap_s = 0;  // between two RoCEv2 packets to vm1
};

Capture decode(const std::string& pcap) {
  Capture c;
  const std::string pfc = runShell("tshark -n -r " + pcap +
                                   " -Y 'macc.cbfc.enbv' -T fields -e macc.cbfc.enbv 2>/dev/null")
                              .out;
  std::istringstream pfc_lines(pfc);
  std::string line;
  while (std::getline(pfc_lines, line)) {
    if (line.empty()) continue;
    ++c.pfc_frames;
    c.pfc_class_enable = static_cast<int>(std::strtol(line.c_str(), nullptr, 0));
  }
  // The ring's QPs only: QP 1 carries the connection manager's MADs, which are always class 0.
  const std::string roce =
      runShell("tshark -n -r " + pcap + " -Y 'udp.dstport == 4791 && ip.dst == " + kVm1Address +
               " && infiniband.bth.destqp != 1' -T fields -E separator=, -e frame.time_epoch -e "
               "ip.dsfield.dscp 2>/dev/null")
          .out;
  std::istringstream roce_lines(roce);
  double previous = 0;
  while (std::getline(roce_lines, line)) {
    const size_t comma = line.find(',');
    if (comma == std::string::npos) continue;
    const double t = std::atof(line.c_str());
    const int dscp = std::atoi(line.c_str() + comma + 1);
    ++c.roce_to_vm1;
    if (std::find(c.dscps.begin(), c.dscps.end(), dscp) == c.dscps.end()) c.dscps.push_back(dscp);
    if (previous > 0) c.longest_gap_s = std::max(c.longest_gap_s, t - previous);
    previous = t;
  }
  return c;
}

json ringUnderStorm(int dscp) {
  return {{"version", 1},
          {"name", "pfc-storm-verbs-dscp" + std::to_string(dscp)},
          {"fabric", "vm-lab"},
          {"workload",
           {{"transport", "verbs"},
            {"hosts", {"vm0", "vm1"}},
            {"message_bytes", 65536},
            {"compute_ms", 5},
            {"peer_timeout_ms", 30000},
            {"dscp", dscp}}},
          {"baseline_ms", 3000},
          {"steps",
           {{{"kind", "pfc_storm"},
             {"target", {{"host", "vm1"}, {"side", "host"}}},
             {"at_ms", 0},
             {"duration_ms", 3000},
             {"params", {{"priorities", {3}}, {"mode", "continuous"}, {"link_mbps", 100}}}}}},
          {"recovery_ms", 8000},
          {"max_duration_ms", 180000}};
}

class PfcRoceEndToEnd : public ::testing::Test {
 protected:
  void SetUp() override {
    FC_REQUIRE_ROOT();
    FC_REQUIRE(missingVmPrerequisite());
    FC_REQUIRE(
        runShell("command -v dumpcap >/dev/null && command -v tshark >/dev/null").exit_code == 0
            ? ""
            : "dumpcap and tshark are not installed (deploy/install-deps.sh)");
    dir_ = makeTempDir();
    binary_ = std::getenv("FC_BINARY");
    launchLab();
  }

  void launchLab() {
    const std::string state = dir_ + "/state";
    const std::string agent = "exec " + binary_ + " agent --listen 0.0.0.0:7070 --token-file " +
                              state + "/vm/agent.token --allow eth0 --mgmt-if eth1";
    const auto up =
        runShell(binary_ + " lab up --kind vm --hosts 2 --link-rate 100mbit --buffer 256k --pfc " +
                 "--state-dir " + state + " --agent-command " + shellQuoted(agent) + " 2>&1");
    ASSERT_EQ(up.exit_code, 0) << up.out;
    lab_up_ = true;
    serve_ = std::make_unique<ServeProcess>(std::vector<std::string>{}, dir_);
    port_ = serve_->waitForPort(30000);
    ASSERT_GT(port_, 0) << serve_->output();
  }

  void relaunchLab() {
    if (serve_) serve_->stop(30000);
    serve_.reset();
    runShell(binary_ + " lab down --kind vm --state-dir " + dir_ + "/state >/dev/null 2>&1");
    lab_up_ = false;
    launchLab();
  }

  void TearDown() override {
    if (serve_) serve_->stop(30000);
    if (HasFailure()) keepEvidence();
    if (!dir_.empty()) {
      if (lab_up_) {
        const auto down =
            runShell(binary_ + " lab down --kind vm --state-dir " + dir_ + "/state 2>&1");
        EXPECT_EQ(down.exit_code, 0) << down.out;
      }
      EXPECT_TRUE(namespacesWithPrefix("fcv-").empty()) << "the VM lab left namespaces behind";
      EXPECT_NE(runShell("pgrep -f '[p]fc-switch --ports fcv-'").exit_code, 0)
          << "the VM lab's PFC agent outlived lab down";
      std::filesystem::remove_all(dir_);
    }
  }

  void keepEvidence(const std::string& suffix = "failure") {
    const char* artifacts = std::getenv("FC_ARTIFACTS");
    if (artifacts == nullptr || dir_.empty()) return;
    const std::filesystem::path to = std::filesystem::path(artifacts) / "pfc_roce_e2e" / suffix;
    std::error_code ec;
    std::filesystem::create_directories(to, ec);
    for (const char* file :
         {"vm/vm0.console.log", "vm/vm1.console.log", "pfc/fcv-sw0.json", "pfc/fcv-sw0.log"}) {
      std::filesystem::copy_file(dir_ + "/state/" + file,
                                 to / std::filesystem::path(file).filename(),
                                 std::filesystem::copy_options::overwrite_existing, ec);
    }
    if (serve_) std::ofstream(to / "serve.log") << serve_->output();
    std::cerr << "pfc_roce_e2e: guest consoles, the PFC agent's state and serve's output kept in "
              << to << "\n";
  }

  // One run of the ring under vm1's storm, with dumpcap on vm1's switch port around it.
  std::pair<json, Capture> runUnderCapture(int dscp) {
    const std::string pcap = dir_ + "/tap1-dscp" + std::to_string(dscp) + ".pcap";
    std::string pid = runShell(
                          "timeout 300 ip netns exec fcv-sw0 dumpcap -q -i fcv-tap1 -s 96 -f "
                          "'udp port 4791 or ether proto 0x8808' -w " +
                          pcap + " >/dev/null 2>&1 & echo $!")
                          .out;
    while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
    std::this_thread::sleep_for(std::chrono::seconds(1));
    const int64_t id = startRun(port_, ringUnderStorm(dscp));
    json run = id > 0 ? waitForFinalRun(port_, id, 240) : json();
    runShell("kill -INT " + pid + "; sleep 1");
    return {run, decode(pcap)};
  }

  std::string dir_;
  std::string binary_;
  bool lab_up_ = false;
  std::unique_ptr<ServeProcess> serve_;
  int port_ = 0;
};

TEST_F(PfcRoceEndToEnd, AStormPausesTheVerbsRingInTheLosslessClassAndNotInBestEffort) {
  // Soft-RoCE in the 6.12 guests can panic their kernel (a double fault in rxe's receiver was seen
  // once in this test, after the storm): the lab failing, not the product. Once, the test says so,
  // keeps the consoles, relaunches the lab and runs both runs again; a second panic fails it.
  const json::json_pointer steps_at("/result/analysis/steps");
  json lossless_run, control_run, counters;
  Capture lossless, control;
  for (int attempt = 1;; ++attempt) {
    std::tie(lossless_run, lossless) = runUnderCapture(26);
    // The switch agent's counters after the storm run, before the control run adds to them.
    const json agent_state =
        json::parse(readFile(dir_ + "/state/pfc/fcv-sw0.json"), nullptr, false);
    const json::json_pointer tap1("/ports/fcv-tap1");
    counters =
        agent_state.is_object() && agent_state.contains(tap1) ? agent_state[tap1] : json::object();
    std::string panicked = panickedGuest(dir_ + "/state", {"vm0", "vm1"});
    if (panicked.empty()) {
      std::tie(control_run, control) = runUnderCapture(0);
      panicked = panickedGuest(dir_ + "/state", {"vm0", "vm1"});
    }
    if (panicked.empty()) break;
    keepEvidence("attempt" + std::to_string(attempt));
    ASSERT_EQ(attempt, 1) << panicked << "'s kernel panicked again: "
                          << guestPanicLine(dir_ + "/state", panicked);
    std::cout << "pfc_roce_e2e: " << panicked << "'s guest kernel panicked ("
              << guestPanicLine(dir_ + "/state", panicked) << "); relaunching the lab\n";
    relaunchLab();
    ASSERT_FALSE(HasFatalFailure());
  }
  // A run that ended in an error has a result without an analysis: shown, not dereferenced.
  ASSERT_TRUE(lossless_run.contains(steps_at) && lossless_run[steps_at].is_array())
      << lossless_run.dump(2);
  ASSERT_TRUE(control_run.contains(steps_at) && control_run[steps_at].is_array())
      << control_run.dump(2);
  const json& step = lossless_run["result"]["analysis"]["steps"][0];
  const json& control_step = control_run["result"]["analysis"]["steps"][0];

  std::cout << "pfc-storm on the verbs ring (VM lab): DSCP 26 retained " << step["retained"]
            << " (longest stall " << step["longest_stall_ms"] << " ms), best effort retained "
            << control_step["retained"] << "; dumpcap on fcv-tap1: " << lossless.pfc_frames
            << " PFC frames, " << lossless.roce_to_vm1
            << " RoCEv2 packets to vm1 with the longest silence " << lossless.longest_gap_s
            << " s (DSCP 26 run), " << control.longest_gap_s << " s (best effort, "
            << control.roce_to_vm1 << " packets); agent: rx_prio3_pause "
            << counters.value("rx_prio3_pause", json()) << ", held "
            << counters.value("prio3_held_frames", json()) << ", dropped "
            << counters.value("prio3_pause_dropped_frames", json()) << "\n";

  // The wire: vm1 paused priority 3, and the ring's packets carried the DSCP it was given.
  EXPECT_GE(lossless.pfc_frames, 10) << "a 3 s storm refreshing every 168 ms";
  EXPECT_EQ(lossless.pfc_class_enable, 1 << 3);
  ASSERT_GT(lossless.roce_to_vm1, 100);
  EXPECT_EQ(lossless.dscps, std::vector<int>{26});
  EXPECT_EQ(control.dscps, std::vector<int>{0});
  // Nothing of the lossless class reached vm1 for the storm; best effort never stopped that long.
  EXPECT_GE(lossless.longest_gap_s, 2.5);
  EXPECT_LE(lossless.longest_gap_s, 6.0) << "the ring took far longer than the storm to resume";
  EXPECT_LT(control.longest_gap_s, 1.5);
  // The run's own account agrees.
  EXPECT_LT(step["retained"].get<double>(), 0.3) << step.dump(2);
  ASSERT_TRUE(step["paused_queues"].is_array() && !step["paused_queues"].empty()) << step.dump(2);
  EXPECT_EQ(step["paused_queues"][0]["source"], "sw0/fcv-tap1/lossless");
  EXPECT_NEAR(step["paused_queues"][0]["paused_ms"].get<double>(), 3000, 600);
  EXPECT_GT(control_step["retained"].get<double>(), 0.5) << control_step.dump(2);
  // The agent held the ring's frames and lost none: rxe had nothing to retransmit but late ones.
  EXPECT_GT(counters.value("prio3_held_frames", 0), 0);
  EXPECT_EQ(counters.value("prio3_pause_dropped_frames", -1), 0);
  EXPECT_TRUE(lossless_run["result"]["analysis"]["steps"][0].value("survived", false));
  EXPECT_TRUE(httpRequest(port_, "GET", "/v1/faults").json()["faults"].empty());
}

}  // namespace
}  // namespace fabric_chaos::testing
