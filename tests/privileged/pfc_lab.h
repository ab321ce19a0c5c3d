#pragma once
// The namespace lab with a PFC-honouring switch (`lab up --hosts 3 --link-rate 20mbit --buffer
// 256k --pfc`) and the outside observers its tests share: pings from h0 to h1 with DSCP 26 (the
// lossless class) and without, the kernel's ICMP and TCP counters, `tc -s class show` of a switch
// port, and pause frames sent from h1 by the real emitter. A pause of 65535 quanta at 20 Mbit/s
// lasts 1.678 s: long enough that a loaded machine's scheduling does not blur it.

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tests/privileged/lab_fixture.h"

namespace fabric_chaos::testing {

inline constexpr double kRateBps = 20e6;
inline constexpr double kFullPauseS = 65535.0 * 512 / kRateBps;  // 1.678 s

// One ping's reply: its sequence number and round-trip time.
struct Reply {
  int seq = 0;
  double rtt_ms = 0;
};

inline std::vector<Reply> replies(const std::string& file) {
  std::vector<Reply> out;
  std::istringstream lines(readFile(file));
  std::string line;
  static const std::regex pattern(R"(icmp_seq=(\d+) .*time=([0-9.]+) ms)");
  std::smatch m;
  while (std::getline(lines, line)) {
    if (std::regex_search(line, m, pattern)) out.push_back({std::stoi(m[1]), std::stod(m[2])});
  }
  return out;
}

// A counter of /proc/net/snmp inside a namespace: `group` is "Icmp" or "Tcp".
inline int64_t snmpCounter(const std::string& netns, const std::string& group,
                           const std::string& name) {
  std::istringstream lines(runShell("ip netns exec " + netns + " cat /proc/net/snmp").out);
  std::string names, values;
  while (std::getline(lines, names)) {
    if (names.rfind(group + ": ", 0) != 0 || !std::getline(lines, values)) continue;
    std::istringstream n(names), v(values);
    std::string key, value;
    while (n >> key && v >> value) {
      if (key == name) return std::atoll(value.c_str());
    }
  }
  return -1;
}
inline int64_t icmpCounter(const std::string& netns, const std::string& name) {
  return snmpCounter(netns, "Icmp", name);
}
inline int64_t tcpCounter(const std::string& netns, const std::string& name) {
  return snmpCounter(netns, "Tcp", name);
}

inline double maxRtt(const std::vector<Reply>& rs) {
  double best = 0;
  for (const Reply& r : rs) best = std::max(best, r.rtt_ms);
  return best;
}

// `tc -s class show` of a port: bytes sent by class 1:10 (lossless) and 1:20 (best effort).
inline std::pair<int64_t, int64_t> classBytes(const std::string& port) {
  const std::string out = runShell("tc -s -n fcl-sw0 class show dev " + port).out;
  auto bytesOf = [&](const std::string& classid) -> int64_t {
    const size_t at = out.find("class htb " + classid + " ");
    if (at == std::string::npos) return -1;
    const size_t sent = out.find("Sent ", at);
    return sent == std::string::npos ? -1 : std::atoll(out.c_str() + sent + 5);
  };
  return {bytesOf("1:10"), bytesOf("1:20")};
}

class PfcHonouringLab : public LabFixture {
 protected:
  explicit PfcHonouringLab(std::string lab_flags = "--pfc")
      : LabFixture(/*needs_iperf3=*/true), lab_flags_(std::move(lab_flags)) {}
  void SetUp() override {
    LabFixture::SetUp();
    if (setUpFailed()) return;
    ASSERT_EQ(runShell("command -v tshark").exit_code, 0)
        << "tshark is missing (deploy/install-deps.sh installs it)";
    ASSERT_NO_FATAL_FAILURE(labUp("--hosts 3 --link-rate 20mbit --buffer 256k " + lab_flags_));
  }

  nlohmann::json agentCounters(const std::string& port) {
    const nlohmann::json doc =
        nlohmann::json::parse(readFile(dir_ + "/state/pfc/fcl-sw0.json"), nullptr, false);
    return doc.is_object() ? doc["ports"][port] : nlohmann::json();
  }

  // Two pings from h0 to h1 every 5 ms for `count` requests, DSCP 26 and best effort.
  void startPings(int count) {
    for (const auto& [tos, name] : {std::pair{"104", "lossless"}, std::pair{"0", "best-effort"}}) {
      runShell("ip netns exec fcl-h0 ping -n -Q " + std::string(tos) + " -i 0.005 -W 5 -c " +
               std::to_string(count) + " 10.200.0.2 > " + dir_ + "/ping-" + name + " 2>&1 &");
    }
  }
  void waitForPings() {
    ASSERT_TRUE(waitFor([&] { return runShell("pgrep -f '[p]ing -n -Q'").exit_code != 0; }, 30000));
  }
  std::string emit(const std::string& args) {
    return binary_ + " pfc-emit --ifname eth0 --priorities 3 " + args;
  }
  // A storm from h1 that refreshes every 16.8 ms (paced as for 1 Gbit/s), well inside a
  // watchdog's restoration time: paced for the lab's 20 Mbit/s (a frame every 839 ms), it would
  // fall quiet for longer than 200 ms between frames, and a watchdog would restore and detect
  // again at every frame, as SONiC's does.
  std::string steadyStorm() {
    return emit("--quanta 65535 --continuous --link-mbps 1000 --xon-on-stop");
  }
  // 500 pings (2.5 s) with a steady 1.5 s storm from h1 starting 400 ms in, ended by its XON.
  void pingThroughSteadyStorm() {
    startPings(500);
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    runShell("ip netns exec fcl-h1 timeout -s TERM 1.5 " + steadyStorm() + " >/dev/null 2>&1");
    waitForPings();
  }
  // Exactly one frame of `quanta` from h1: the emitter prints its first stats line right after
  // its first frame, and is killed then, long before its 10 s period would send another.
  void sendOneFrame(int quanta) {
    const std::string out = dir_ + "/one-frame.out";
    const std::string pid =
        runShell("ip netns exec fcl-h1 " +
                 emit("--quanta " + std::to_string(quanta) + " --interval-us 10000000") + " > " +
                 out + " 2>/dev/null & echo $!")
            .out;
    ASSERT_TRUE(
        waitFor([&] { return readFile(out).find("\"frames\":1") != std::string::npos; }, 10000))
        << "the emitter sent nothing";
    runShell("kill -KILL " + pid);
  }

 private:
  std::string lab_flags_;
};

}  // namespace fabric_chaos::testing
