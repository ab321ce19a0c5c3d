// The IB probe's route reading (`fabric-chaos ib-probe --check-routes`) on the real simulated
// subnet, against infiniband-diags run as separate processes at another node: ibtracert says
// which channel-adapter pairs cross the cable the test cuts and that every pair arrives once
// OpenSM has re-routed; ibroute dumps every switch's LFT before the cut, after the re-route and
// after the cable is back, and the entries that differ between those dumps are what the probe
// must count as rewritten. The cable is cut and mended through ibsim's console, by hand.

#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/ib/ib_tier.h"
#include "tests/privileged/support.h"

namespace fabric_chaos {
namespace {

using nlohmann::json;
using testing::runShell;
using testing::waitFor;

constexpr const char* kNetns = "fcib-subnet";
const std::vector<std::string> kHcas = {"h0", "h1", "h2", "h3"};
const std::vector<std::string> kSwitches = {"l0", "l1", "s0", "s1"};

class IbProbeRoutes : public ::testing::Test {
 protected:
  void SetUp() override {
    FC_REQUIRE_ROOT();
    FC_REQUIRE_IB_TOOLS("ibroute", "ibtracert");
    const char* binary = std::getenv("FC_BINARY");
    ASSERT_NE(binary, nullptr) << "FC_BINARY is not set (ctest sets it)";
    binary_ = binary;
    state_dir_ = testing::makeTempDir();
    obs_dir_ = state_dir_ + "/observer";
    probe_dir_ = state_dir_ + "/probe";
    std::filesystem::create_directories(obs_dir_);
    std::filesystem::create_directories(probe_dir_);
    const auto up =
        runShell(binary_ + " lab up --kind ib --leaves 2 --spines 2 " +
                 "--hosts-per-leaf 2 --subnet-managers 1 --state-dir " + state_dir_ + " 2>&1");
    ASSERT_EQ(up.exit_code, 0) << up.out;
    const json fabric = json::parse(testing::readFile(state_dir_ + "/fabrics/ib-lab.json"));
    for (const json& link : fabric["links"]) lid_[link["host"]] = link["labels"]["lid"];
    for (const json& sw : fabric["switches"]) lid_[sw["name"]] = sw["labels"]["lid"];
    console_ = fabric["ib"]["simulator"]["console"];
  }
  void TearDown() override {
    if (probe_pid_ > 0) kill(probe_pid_, SIGKILL);
    if (binary_.empty()) return;
    runShell(binary_ + " lab down --kind ib --state-dir " + state_dir_ + " >/dev/null 2>&1");
    std::filesystem::remove_all(state_dir_);
  }

  testing::CommandOutput tool(const std::string& command) {
    return testing::attachedTool(kNetns, obs_dir_, "h3", command);
  }
  // Every switch's table for the nodes' LIDs, as ibroute prints it: "l0 0x0007" -> "003".
  std::map<std::string, std::string> dumpLfts() {
    std::map<std::string, std::string> entries;
    for (const std::string& sw : kSwitches) {
      std::istringstream lines(tool("ibroute " + lid_.at(sw)).out);
      for (std::string line; std::getline(lines, line);) {
        std::istringstream fields(line);
        std::string dest;
        std::string port;
        if (fields >> dest >> port && dest.rfind("0x", 0) == 0 && port.size() == 3) {
          entries[sw + " " + dest] = port;
        }
      }
    }
    return entries;
  }
  static int differing(const std::map<std::string, std::string>& a,
                       const std::map<std::string, std::string>& b) {
    int count = 0;
    for (const auto& [key, port] : a) {
      const auto other = b.find(key);
      if (other != b.end() && other->second != port) ++count;
    }
    return count;
  }
  // ibtracert's path from one HCA to another: "" when it does not arrive.
  std::string trace(const std::string& from, const std::string& to) {
    const auto out = tool("ibtracert " + lid_.at(from) + " " + lid_.at(to));
    return out.out.find("To ca") == std::string::npos ? "" : out.out;
  }
  // Whether a trace leaves l0 by port 3 (to s0) or s0 by port 1 (to l0): the cable under test.
  static bool crossesL0S0(const std::string& path) {
    std::istringstream lines(path);
    std::string previous;
    for (std::string line; std::getline(lines, line); previous = line) {
      if (previous.find("\"l0\"") != std::string::npos && line.rfind("[3] -> ", 0) == 0)
        return true;
      if (previous.find("\"s0\"") != std::string::npos && line.rfind("[1] -> ", 0) == 0)
        return true;
    }
    return false;
  }
  std::vector<json> probeEvents(const std::string& kind) {
    std::vector<json> out;
    std::istringstream lines(testing::readFile(probe_dir_ + "/out"));
    for (std::string line; std::getline(lines, line);) {
      const json doc = json::parse(line, nullptr, false);
      if (doc.is_object() && doc.value("type", "") == "event" && doc.value("kind", "") == kind) {
        out.push_back(doc["detail"]);
      }
    }
    return out;
  }
  void console(const std::string& command) {
    ASSERT_EQ(runShell("echo '" + command + "' > " + console_).exit_code, 0);
  }

  std::string binary_;
  std::string state_dir_;
  std::string obs_dir_;
  std::string probe_dir_;
  std::string console_;
  std::map<std::string, std::string> lid_;
  int probe_pid_ = 0;
};

TEST_F(IbProbeRoutes, ACutSpineCableIsABreakTheSmMendsAndTheEntriesItRewrote) {
  // The pairs that cross l0-s0, and every table, before anything happens.
  int crossing = 0;
  for (const std::string& from : kHcas) {
    for (const std::string& to : kHcas) {
      if (from == to) continue;
      const std::string path = trace(from, to);
      ASSERT_FALSE(path.empty()) << from << " -> " << to << " does not arrive before the cut";
      crossing += crossesL0S0(path);
    }
  }
  ASSERT_GT(crossing, 0) << "min-hop routing sends none of the 12 pairs over l0-s0";
  const auto before = dumpLfts();
  ASSERT_EQ(before.size(), 4u * 8) << "ibroute: 4 switches x 8 LIDs";

  const auto started =
      runShell("ip netns exec " + std::string(kNetns) + " env -C " + probe_dir_ +
               " SIM_HOST=h1 LD_PRELOAD=" + testing::kUmad2sim + " " + binary_ +
               " ib-probe --check-routes --routes-period-ms 10 --duration-s 60 > " + probe_dir_ +
               "/out 2> " + probe_dir_ + "/err & echo $!");
  probe_pid_ = std::atoi(started.out.c_str());
  ASSERT_GT(probe_pid_, 0) << started.out;
  ASSERT_TRUE(waitFor([&] { return !probeEvents("routes_checked").empty(); }, 10000))
      << testing::readFile(probe_dir_ + "/err");
  const json checked = probeEvents("routes_checked").front();
  EXPECT_EQ(checked["switches"], 4);
  EXPECT_EQ(checked["channel_adapters"], 4);
  EXPECT_EQ(checked["pairs"], 12);
  EXPECT_EQ(checked["entries"], 32);

  console("Unlink \"l0\"[3]");
  // OpenSM re-routes in tens of milliseconds; the probe reads every 10 ms.
  ASSERT_TRUE(waitFor([&] { return !probeEvents("routes_restored").empty(); }, 10000))
      << testing::readFile(probe_dir_ + "/out");
  const auto broken = probeEvents("routes_broken");
  ASSERT_EQ(broken.size(), 1u);
  std::cout << "probe: " << broken[0].dump() << "; ibtracert: " << crossing
            << " pairs crossed l0-s0; restored after "
            << probeEvents("routes_restored")[0]["after_ms"] << " ms\n";
  // Before OpenSM touches a table, exactly the crossing pairs break; a pass that lands in the
  // middle of its update sees fewer.
  EXPECT_GE(broken[0]["unroutable"].get<int>(), 1);
  EXPECT_LE(broken[0]["unroutable"].get<int>(), crossing);
  EXPECT_EQ(broken[0]["pairs"], 12);
  const std::string problem = broken[0]["problem"];
  EXPECT_TRUE(problem.find("l0 sends LID") != std::string::npos ||
              problem.find("s0 sends LID") != std::string::npos)
      << problem;
  for (const std::string& from : kHcas) {
    for (const std::string& to : kHcas) {
      if (from == to) continue;
      const std::string path = trace(from, to);
      EXPECT_FALSE(path.empty()) << from << " -> " << to << ": the probe says restored";
      EXPECT_FALSE(crossesL0S0(path)) << from << " -> " << to << " still crosses the cut\n" << path;
    }
  }
  // Let the probe read the settled tables, then compare with ibroute's.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto rerouted = dumpLfts();
  const int rewritten = differing(before, rerouted);
  ASSERT_GT(rewritten, 0);
  auto changes = probeEvents("lft_changed");
  ASSERT_FALSE(changes.empty());
  EXPECT_EQ(changes.back()["from_first"], rewritten) << "ibroute: " << rewritten;
  EXPECT_EQ(changes.back()["of"], 32);

  console("ReLink \"l0\"[3]");
  // The SM routes over the cable again: wait until ibroute shows a table move, then settle.
  ASSERT_TRUE(waitFor([&] { return differing(rerouted, dumpLfts()) > 0; }, 10000));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const auto mended = dumpLfts();
  ASSERT_TRUE(waitFor([&] { return probeEvents("lft_changed").size() > changes.size(); }, 5000));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  changes = probeEvents("lft_changed");
  std::cout << "ibroute: " << rewritten << " of 32 entries rewritten by the re-route, "
            << differing(before, mended)
            << " differ from the start after the relink; probe: " << changes.back().dump() << "\n";
  EXPECT_EQ(changes.back()["from_first"], differing(before, mended));
  // A relink can break routes too, for as long as OpenSM points tables at a port it has not yet
  // made Active; whatever broke must be whole again.
  const auto breaks = probeEvents("routes_broken");
  const auto restorations = probeEvents("routes_restored");
  EXPECT_EQ(breaks.size(), restorations.size());
  for (size_t i = 1; i < breaks.size(); ++i) {
    std::cout << "after the relink: " << breaks[i].dump() << ", restored "
              << (i < restorations.size() ? restorations[i].dump() : "never") << "\n";
  }

  kill(probe_pid_, SIGTERM);
  ASSERT_TRUE(waitFor(
      [&] { return testing::readFile(probe_dir_ + "/out").find("\"done\"") != std::string::npos; },
      5000));
  probe_pid_ = 0;
  // libibmad's warnings for the MADs lost on the cut cable are kept out of the probe's stderr.
  EXPECT_EQ(testing::readFile(probe_dir_ + "/err").find("ibwarn"), std::string::npos)
      << testing::readFile(probe_dir_ + "/err");
}

}  // namespace
}  // namespace fabric_chaos
