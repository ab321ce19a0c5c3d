// `fabric-chaos lab up --topology leaf-spine` on the real kernel, observed with `ip` and port
// counters only: hosts reach each other across the spines, UDP flows from many source ports
// spread over both spines, a downed uplink moves every flow in both directions to the other spine
// (BGP withdraws what the broken spine can no longer reach), and the paths come back with the
// link. Then a spine failure through serve's REST API: link_flap on every port of spine s0
// (labels {spine=s0}, side peer) while the workload's ring crosses the spines; the run passes,
// `ip` saw both ports go down and come back, and the ring stalled far less than the outage.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "core/unique_fd.h"
#include "injectors/sys/netns.h"
#include "tests/privileged/support.h"

namespace fabric_chaos::testing {
namespace {

using nlohmann::json;

constexpr int kFlows = 64;
constexpr int kPacketsPerFlow = 5;

class LeafSpineLab : public ::testing::Test {
 protected:
  void SetUp() override {
    FC_REQUIRE_ROOT();
    ASSERT_TRUE(namespacesWithPrefix("fcl-").empty()) << "a lab is already up (fcl-*)";
    dir_ = makeTempDir();
    ASSERT_FALSE(dir_.empty());
    binary_ = std::getenv("FC_BINARY") == nullptr ? "" : std::getenv("FC_BINARY");
    ASSERT_FALSE(binary_.empty()) << "FC_BINARY is not set";
    const CommandOutput up =
        lab("up --topology leaf-spine --leaves 2 --spines 2 --hosts-per-leaf 2");
    ASSERT_EQ(up.exit_code, 0) << up.out;
    lab_up_ = true;
  }
  void TearDown() override {
    if (lab_up_) {
      const CommandOutput down = lab("down");
      EXPECT_EQ(down.exit_code, 0) << down.out;
    }
    EXPECT_TRUE(namespacesWithPrefix("fcl-").empty()) << "lab down left namespaces";
    // No routing daemon outlives the lab (they run with configurations under dir_).
    const CommandOutput birds = runShell("pgrep -af '[b]ird -c " + dir_ + "'");
    EXPECT_NE(birds.exit_code, 0) << "still running:\n" << birds.out;
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  CommandOutput lab(const std::string& args) {
    return runShell(binary_ + " lab " + args + " --state-dir " + dir_ + "/state 2>&1");
  }

  // rx packets of a switch port, read by `ip -s -j link show`.
  static int64_t rxPackets(const std::string& netns, const std::string& ifname) {
    const CommandOutput out = runShell("ip -n " + netns + " -s -j link show dev " + ifname);
    const json doc = json::parse(out.out, nullptr, false);
    if (out.exit_code != 0 || !doc.is_array() || doc.empty()) return -1;
    return doc[0]["stats64"]["rx"]["packets"].get<int64_t>();
  }

  // kFlows UDP flows (source ports 41000...) of kPacketsPerFlow datagrams from inside `netns`.
  static void sendFlows(const std::string& netns, const std::string& destination) {
    const core::Status sent = sys::runInNetns(netns, [&]() -> core::Status {
      sockaddr_in to{};
      to.sin_family = AF_INET;
      to.sin_port = htons(9999);
      ::inet_pton(AF_INET, destination.c_str(), &to.sin_addr);
      for (int flow = 0; flow < kFlows; ++flow) {
        core::UniqueFd fd(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
        sockaddr_in from{};
        from.sin_family = AF_INET;
        from.sin_port = htons(static_cast<uint16_t>(41000 + flow));
        if (!fd.valid() ||
            ::bind(fd.get(), reinterpret_cast<sockaddr*>(&from), sizeof(from)) != 0) {
          return core::errnoStatus(errno, "udp socket");
        }
        for (int i = 0; i < kPacketsPerFlow; ++i) {
          const char payload[64] = {};
          if (::sendto(fd.get(), payload, sizeof(payload), 0, reinterpret_cast<sockaddr*>(&to),
                       sizeof(to)) != sizeof(payload)) {
            return core::errnoStatus(errno, "sendto");
          }
        }
      }
      return core::Status::ok();
    });
    ASSERT_TRUE(sent.isOk()) << sent.toString();
  }

  struct Spread {
    int64_t via_s0;
    int64_t via_s1;
    int64_t delivered;  // received by the destination host's NIC
  };
  // kFlows flows from host `from` to host `to`, counted where they enter each spine (port dn<i>
  // from the source's leaf i) and at the destination.
  Spread flowsAcrossSpines(int from = 0, int to = 2) {
    const std::string from_leaf = std::to_string(from / 2);
    const std::string dn = "dn" + from_leaf;
    const std::string to_ns = "fcl-h" + std::to_string(to);
    const int64_t s0_before = rxPackets("fcl-s0", dn);
    const int64_t s1_before = rxPackets("fcl-s1", dn);
    const int64_t to_before = rxPackets(to_ns, "eth0");
    sendFlows("fcl-h" + std::to_string(from), kHostAddress[to]);
    // Counters are read after the last datagram left the source; give forwarding a moment.
    ::usleep(200 * 1000);
    return {rxPackets("fcl-s0", dn) - s0_before, rxPackets("fcl-s1", dn) - s1_before,
            rxPackets(to_ns, "eth0") - to_before};
  }

  // Both leaves reach each other through both spines again (BGP re-established its sessions).
  static bool allPathsBack() {
    auto paths = [](const std::string& leaf, const std::string& subnet) {
      const std::string routes = runShell("ip -n " + leaf + " route show " + subnet).out;
      size_t count = 0;
      for (size_t at = routes.find("nexthop"); at != std::string::npos;
           at = routes.find("nexthop", at + 1)) {
        ++count;
      }
      return count;
    };
    return paths("fcl-l0", "10.210.1.0/24") == 2 && paths("fcl-l1", "10.210.0.0/24") == 2;
  }

  static constexpr const char* kHostAddress[] = {"10.210.0.1", "10.210.0.2", "10.210.1.1",
                                                 "10.210.1.2"};

  std::string dir_;
  std::string binary_;
  bool lab_up_ = false;
};

TEST_F(LeafSpineLab, RoutesAcrossTheSpinesAndRehashesAroundADownedUplink) {
  // The switches' kernel settings, read with sysctl inside each namespace.
  for (const char* sw : {"fcl-l0", "fcl-l1", "fcl-s0", "fcl-s1"}) {
    const CommandOutput settings =
        runShell(std::string("ip netns exec ") + sw +
                 " sysctl -n net.ipv4.ip_forward net.ipv4.fib_multipath_hash_policy");
    EXPECT_EQ(settings.out, "1\n1\n") << sw;
  }
  const CommandOutput birds = runShell("pgrep -cf '[b]ird -c " + dir_ + "'");
  EXPECT_EQ(birds.out, "4\n") << "one BGP daemon per switch";
  // up again with the same shape leaves a working lab alone; one whose routing died is rebuilt.
  const CommandOutput kept =
      lab("up --topology leaf-spine --leaves 2 --spines 2 --hosts-per-leaf 2");
  EXPECT_EQ(kept.exit_code, 0) << kept.out;
  EXPECT_NE(kept.out.find("is already up"), std::string::npos) << kept.out;
  // SIGKILL: the daemons leave their routes behind, so only the missing daemons tell.
  ASSERT_EQ(runShell("pkill -KILL -f '[b]ird -c " + dir_ + "'").exit_code, 0);
  ASSERT_TRUE(
      waitFor([&] { return runShell("pgrep -f '[b]ird -c " + dir_ + "'").exit_code != 0; }, 5000));
  const CommandOutput rebuilt =
      lab("up --topology leaf-spine --leaves 2 --spines 2 --hosts-per-leaf 2");
  EXPECT_EQ(rebuilt.exit_code, 0) << rebuilt.out;
  EXPECT_NE(rebuilt.out.find("its BGP routing is broken (no BGP daemon in fcl-l0"),
            std::string::npos)
      << rebuilt.out;
  EXPECT_NE(rebuilt.out.find("BGP converged"), std::string::npos) << rebuilt.out;

  const CommandOutput status = lab("status");
  EXPECT_EQ(status.exit_code, 0) << status.out;
  EXPECT_EQ(status.out.rfind("up (8 namespaces present", 0), 0u) << status.out;

  // Same leaf, and across the spines in both directions.
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"fcl-h0", "10.210.0.2"}, {"fcl-h0", "10.210.1.1"}, {"fcl-h3", "10.210.0.1"}}) {
    const CommandOutput ping =
        runShell("ip netns exec " + from + " ping -n -q -c 2 -i 0.2 -W 2 " + to);
    EXPECT_EQ(ping.exit_code, 0) << from << " -> " << to << "\n" << ping.out;
  }

  const int64_t total = int64_t{kFlows} * kPacketsPerFlow;
  ASSERT_TRUE(allPathsBack()) << runShell("ip -n fcl-l0 route").out;
  const Spread both = flowsAcrossSpines();
  std::cout << "ECMP, both uplinks up: via s0 " << both.via_s0 << ", via s1 " << both.via_s1
            << " of " << total << "\n";
  EXPECT_GE(both.via_s0 + both.via_s1, total);
  EXPECT_GE(both.delivered, total);
  // 64 flows hashed independently: all on one spine has probability 2^-63.
  EXPECT_GT(both.via_s0, total / 8);
  EXPECT_GT(both.via_s1, total / 8);

  // Leaf l0's uplink to s0 down at the leaf. l0 stops using s0 at once; s0 loses its session to
  // l0 and withdraws l0's hosts from l1, so l1's flows towards l0 avoid s0 too (with static
  // routes they would be dropped at s0).
  ASSERT_EQ(runShell("ip -n fcl-l0 link set up0 down").exit_code, 0);
  ASSERT_TRUE(waitFor(
      [] {
        const std::string routes = runShell("ip -n fcl-l1 route show 10.210.0.0/24").out;
        return !routes.empty() && routes.find("nexthop") == std::string::npos;
      },
      5000))
      << "l1 kept a path through s0 to l0's hosts:\n"
      << runShell("ip -n fcl-l1 route").out;
  const Spread out_of_l0 = flowsAcrossSpines(0, 2);
  const Spread into_l0 = flowsAcrossSpines(2, 0);
  std::cout << "l0-s0 down: l0->l1 via s0 " << out_of_l0.via_s0 << ", via s1 " << out_of_l0.via_s1
            << "; l1->l0 via s0 " << into_l0.via_s0 << ", via s1 " << into_l0.via_s1
            << ", delivered " << into_l0.delivered << "\n";
  EXPECT_EQ(out_of_l0.via_s0, 0);
  EXPECT_GE(out_of_l0.delivered, total);
  // What still enters s0 from l1 is the l1-s0 session's own BFD (10/s) and BGP keepalives.
  EXPECT_LE(into_l0.via_s0, 8) << "s0 can no longer reach l0: l1 must not send it l0's traffic";
  EXPECT_GE(into_l0.delivered, total);
  ASSERT_EQ(runShell("ip -n fcl-l0 link set up0 up").exit_code, 0);
  ASSERT_TRUE(waitFor(allPathsBack, 15000)) << runShell("ip -n fcl-l0 route").out;
  const Spread leaf_back = flowsAcrossSpines();
  EXPECT_GT(leaf_back.via_s0, total / 8) << "s0 carries flows again once the link is back";
  EXPECT_GE(leaf_back.delivered, total);

  // Spine s0 fails (both its ports down): the leaves only lose carrier on their uplinks, and
  // must still stop using s0 at once.
  ASSERT_EQ(runShell("ip -n fcl-s0 link set dn0 down && ip -n fcl-s0 link set dn1 down").exit_code,
            0);
  const Spread spine_down = flowsAcrossSpines();
  std::cout << "spine s0 down: via s1 " << spine_down.via_s1 << ", delivered "
            << spine_down.delivered << "\n";
  EXPECT_GE(spine_down.via_s1, total) << "every flow re-hashed onto s1";
  EXPECT_GE(spine_down.delivered, total);
  ASSERT_EQ(runShell("ip -n fcl-s0 link set dn0 up && ip -n fcl-s0 link set dn1 up").exit_code, 0);
  ASSERT_TRUE(waitFor(allPathsBack, 15000)) << runShell("ip -n fcl-l0 route").out;
  const Spread again = flowsAcrossSpines();
  EXPECT_GT(again.via_s0, total / 8) << "s0 carries flows again once its ports are back";
  EXPECT_GT(again.via_s1, total / 8);
  EXPECT_GE(again.delivered, total);
}

TEST_F(LeafSpineLab, ASpineFailsUnderTheWorkloadThroughTheApiAndTheRingSurvives) {
  ServeProcess serve({}, dir_);
  const int port = serve.waitForPort(20000);
  ASSERT_GT(port, 0) << serve.output();

  const json fabric = httpRequest(port, "GET", "/v1/fabrics/netns-lab").json();
  ASSERT_TRUE(fabric.contains("switch_links")) << fabric.dump(2);
  EXPECT_EQ(fabric["switch_links"].size(), 4u);

  const json scenario = {
      {"version", 1},
      {"name", "spine-s0-fails"},
      {"workload", {{"message_bytes", 262144}, {"compute_ms", 5}, {"peer_timeout_ms", 10000}}},
      {"baseline_ms", 2000},
      {"steps",
       {{{"kind", "link_flap"},
         {"target", {{"labels", {{"spine", "s0"}}}, {"side", "peer"}}},
         {"at_ms", 0},
         {"params", {{"down_ms", 1500}, {"up_ms", 500}, {"count", 1}}}}}},
      {"recovery_ms", 4000},
      {"gates", {{"require_survival", true}}}};
  LinkObserver dn0("fcl-s0", "dn0");
  LinkObserver dn1("fcl-s0", "dn1");
  const int64_t id = startRun(port, scenario);
  ASSERT_GT(id, 0) << serve.output();
  const json run = waitForFinalRun(port, id, 90);
  for (auto* observer : {&dn0, &dn1}) {
    const auto changes = observer->stop();
    std::vector<bool> states;
    for (const auto& change : changes) {
      if (states.empty() || states.back() != change.admin_up) states.push_back(change.admin_up);
    }
    EXPECT_EQ(states, (std::vector<bool>{true, false, true})) << "up, down, up again";
  }
  ASSERT_EQ(run.value("state", ""), "passed") << run.dump(2) << "\n" << serve.output();
  const json& step = run["result"]["analysis"]["steps"][0];
  std::cout << "spine s0 down for 1.5 s: " << step.dump() << "\n";
  // The ring's flows through s0 moved to s1 within a TCP retransmission or two; a fabric that
  // did not re-route would stall them for the whole 1.5 s outage.
  EXPECT_LT(step["longest_stall_ms"].get<double>(), 1000 * timingScale()) << step.dump(2);
  EXPECT_TRUE(adminUp("fcl-s0", "dn0"));
  EXPECT_TRUE(adminUp("fcl-s0", "dn1"));
  const json faults = httpRequest(port, "GET", "/v1/faults").json();
  EXPECT_TRUE(faults.value("faults", json::array()).empty()) << faults.dump(2);
  EXPECT_EQ(serve.stop(20000), 0);
}

TEST_F(LeafSpineLab, TotalLossOnAnUplinkIsRoutedAroundOnceBfdGivesUpThePeer) {
  // A grey failure: the link stays up, but everything leaf l0 sends to spine s0 is dropped
  // (packet_loss 100 %, egress, on l0's port up0). Nothing goes down, so only BFD notices
  // (3 x 100 ms): s0 stops hearing l0, ends the session and withdraws l0's hosts from l1.
  ServeProcess serve({}, dir_);
  const int port = serve.waitForPort(20000);
  ASSERT_GT(port, 0) << serve.output();
  const json scenario = {
      {"version", 1},
      {"name", "grey-uplink"},
      {"workload", {{"message_bytes", 262144}, {"compute_ms", 5}, {"peer_timeout_ms", 10000}}},
      {"baseline_ms", 2000},
      {"steps",
       {{{"kind", "packet_loss"},
         {"target", {{"link", "l0-s0"}}},
         {"at_ms", 0},
         {"duration_ms", 6000},
         {"params", {{"percent", 100}, {"direction", "egress"}}}}}},
      {"recovery_ms", 4000},
      {"gates", {{"require_survival", true}}}};

  std::atomic<bool> stop{false};
  std::atomic<bool> loss_seen{false};
  std::atomic<bool> withdrawn_seen{false};
  std::thread watcher([&] {
    while (!stop) {
      if (lossFaultInForce("fcl-l0", "up0")) {
        loss_seen = true;
        const std::string routes = runShell("ip -n fcl-l1 route show 10.210.0.0/24").out;
        if (!routes.empty() && routes.find("nexthop") == std::string::npos) withdrawn_seen = true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });
  const int64_t id = startRun(port, scenario);
  const json run = id > 0 ? waitForFinalRun(port, id, 90) : json();
  stop = true;
  watcher.join();
  ASSERT_GT(id, 0) << serve.output();
  ASSERT_EQ(run.value("state", ""), "passed") << run.dump(2) << "\n" << serve.output();
  EXPECT_TRUE(loss_seen) << "tc/nft never showed the loss on fcl-l0/up0";
  EXPECT_TRUE(withdrawn_seen) << "l1 kept its path through s0 to l0's hosts while s0 heard nothing";
  EXPECT_FALSE(lossFaultInForce("fcl-l0", "up0"));
  std::cout << "grey uplink l0-s0 for 6 s: " << run["result"]["analysis"]["steps"][0].dump()
            << "\n";
  ASSERT_TRUE(waitFor(allPathsBack, 15000)) << "the session comes back after the fault";
  EXPECT_EQ(serve.stop(20000), 0);
}

}  // namespace
}  // namespace fabric_chaos::testing
