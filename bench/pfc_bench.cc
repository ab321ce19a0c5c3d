// The PFC storm emitter and the PFC-honouring lab switch (issue 11 §4), printed as ratios measured
// in one run on a 3-host star lab at 100 Mbit/s with --pfc (prefix fcpb-*, built and removed here):
//  1. emitter rate: frames/s `fabric-chaos pfc-emit` sustains as fast as it can (--interval-us 1,
//     counted by tshark on the receiving switch port), over the frames/s needed to hold a pause
//     of 65535 quanta at the lab's rate, and at 10 and 100 Gbit/s (target >= 10);
//  2. inter-frame gap jitter: a continuous storm paced for 10 Gbit/s (a frame every 1.68 ms, under
//     SCHED_FIFO as the pfc_storm fault runs it), its gaps as tshark timestamps them on the switch
//     port; p99 of |gap - period| over the pause time (3.36 ms; target <= 0.1);
//  3. pause accuracy: single frames of 65535 down to 256 quanta from h1, while h0 sends h1 a
//     40 Mbit/s UDP flow with DSCP 26 (iperf3, paced every 100 us). tshark timestamps the pause
//     frame on the switch port (where 802.1Qbb starts the pause) and every datagram on h0's and
//     h1's NICs (one clock, one machine). The stall: from the frame's arrival to the arrival at
//     h1 of the datagram sent after it that waited longest (the first one the paused port held,
//     which leaves when the port resumes); over the requested pause time (target 0.9-1.1). Sent
//     after the frame arrived and through anyway: how long the switch took to close the port. It
//     needs a datagram sent in the pause's first half, or the case says n/a. Measuring the longest
//     one-way delay instead, as this bench did, undercounts by the gap between the pause's start
//     and the next datagram (up to the 1 ms of iperf3's default pacing: 0.86 for 1024 quanta) and,
//     matched by IP id alone, met ids that iperf3 repeats (a "1.7 s" delay).
// Root only; needs tshark, iperf3 and the fabric-chaos binary (../app/fabric-chaos next to this
// program, or FC_BINARY).
// Run: flock /tmp/fc-fabric.lock ./build/bench/pfc_bench

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "bench/bench_lab.h"
#include "bench/bench_shell.h"
#include "lab/netns_lab.h"

namespace {

using fabric_chaos::lab::LabOptions;

constexpr double kRateBps = 100e6;

using fabric_chaos::bench::shell;

std::vector<double> numbers(const std::string& text) {
  std::vector<double> out;
  std::istringstream in(text);
  double value;
  while (in >> value) out.push_back(value);
  return out;
}

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[std::min(values.size() - 1, static_cast<size_t>(p * values.size()))];
}

// Starts tshark in netns on ifname with `filter`, writing frame times (epoch seconds), and the
// IP id when `with_ip_id`, to file.
void startCapture(const std::string& netns, const std::string& ifname, const std::string& filter,
                  const std::string& file, bool with_ip_id = false) {
  shell("timeout 60 ip netns exec " + netns + " tshark -l -n -i " + ifname + " -f '" + filter +
        "' -T fields -e frame.time_epoch" + (with_ip_id ? " -e ip.id" : "") + " > " + file + " 2>" +
        file + ".err &");
  for (int i = 0; i < 100; ++i) {
    if (shell("cat " + file + ".err").find("Capturing on") != std::string::npos) return;
    ::usleep(100 * 1000);
  }
}

// "<epoch seconds>\t<ip id>" lines; others (a frame without an id) are skipped.
std::vector<std::pair<double, std::string>> timesById(const std::string& text) {
  std::vector<std::pair<double, std::string>> out;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    const size_t tab = line.find('\t');
    if (tab == std::string::npos || tab + 1 >= line.size()) continue;
    char* end = nullptr;
    const double time = std::strtod(line.c_str(), &end);
    if (end != line.c_str() + tab) continue;
    out.emplace_back(time, line.substr(tab + 1));
  }
  return out;
}

// Stops every capture and waits until each tshark has exited. One still writing after a case
// (tshark drains its backlog after SIGINT, seconds of it after a storm) would write that case's
// lines into the next case's file at its old offset: matched by IP id, they read as delays of a
// whole case (2.7 s in one run) or disturb the next measurement.
void stopCaptures() {
  ::usleep(300 * 1000);
  shell("pkill -INT -f 'tshark -l -n -i'");
  for (int i = 0; i < 100 && !shell("pgrep -f 'tshark -l -n -i'").empty(); ++i) {
    ::usleep(100 * 1000);
  }
  shell("pkill -KILL -f 'tshark -l -n -i'; sleep 0.2");
}

}  // namespace

int main(int, char** argv) {
  if (::geteuid() != 0) {
    std::fprintf(stderr, "pfc_bench: needs root (it builds network namespaces)\n");
    return 2;
  }
  const std::string binary = std::getenv("FC_BINARY") != nullptr
                                 ? std::getenv("FC_BINARY")
                                 : (std::filesystem::absolute(argv[0]).parent_path().parent_path() /
                                    "app" / "fabric-chaos")
                                       .lexically_normal()
                                       .string();
  if (!std::filesystem::exists(binary) || shell("command -v tshark").empty() ||
      shell("command -v iperf3").empty()) {
    std::fprintf(stderr, "pfc_bench: needs %s, tshark and iperf3\n", binary.c_str());
    return 2;
  }
  char dir_template[] = "/tmp/fc-pfc-bench-XXXXXX";
  const std::string dir = ::mkdtemp(dir_template);
  LabOptions options = fabric_chaos::bench::modelledStar(3, "fcpb", "pfc-bench", dir + "/state",
                                                         static_cast<int64_t>(kRateBps));
  options.binary = binary;
  options.egress->pfc = fabric_chaos::scenarios::PfcHonouring{3};
  fabric_chaos::bench::BenchLab lab(options);
  if (!lab.up()) return 2;
  std::printf(
      "pfc_bench: star lab, 3 hosts, ports at 100 Mbit/s honouring PFC (lab up --pfc); "
      "%ld cores\n",
      ::sysconf(_SC_NPROCESSORS_ONLN));
  const std::string emit =
      "ip netns exec fcpb-h1 " + binary + " pfc-emit --ifname eth0 --priorities 3 ";

  // 1. As fast as the emitter goes, for 2 s.
  startCapture("fcpb-sw0", "p1", "ether proto 0x8808", dir + "/rate");
  shell("timeout -s INT 2 " + emit + "--quanta 65535 --interval-us 1 > /dev/null 2>&1");
  stopCaptures();
  const std::vector<double> rate_times = numbers(shell("cat " + dir + "/rate"));
  const double fps = rate_times.size() < 2 ? 0
                                           : static_cast<double>(rate_times.size() - 1) /
                                                 (rate_times.back() - rate_times.front());
  std::printf("\n1. emitter rate: %.0f frames/s seen by tshark on the switch port\n", fps);
  for (const double link : {kRateBps, 10e9, 100e9}) {
    const double needed = link / (65535.0 * 512);
    std::printf(
        "   over the %.0f frames/s that hold 65535 quanta at %g Gbit/s   %10.1f  "
        "(target >= 10)\n",
        needed, link / 1e9, fps / needed);
  }

  // 2. A continuous storm paced for 10 Gbit/s, 3 s.
  startCapture("fcpb-sw0", "p1", "ether proto 0x8808", dir + "/gaps");
  shell("timeout -s INT 3 " + emit +
        "--quanta 65535 --continuous --realtime --link-mbps 10000 > /dev/null 2>&1");
  stopCaptures();
  const std::vector<double> gap_times = numbers(shell("cat " + dir + "/gaps"));
  const double pause_10g = 65535.0 * 512 / 10e9;
  const double period = pause_10g / 2;
  std::vector<double> jitter;
  for (size_t i = 1; i + 1 < gap_times.size(); ++i) {  // the last frame is the stop's, if any
    jitter.push_back(std::fabs(gap_times[i] - gap_times[i - 1] - period));
  }
  std::printf(
      "\n2. continuous storm for 10 Gbit/s: %zu gaps, period %.3f ms, |gap - period| "
      "p50 %.1f us, p99 %.1f us\n",
      jitter.size(), period * 1e3, percentile(jitter, 0.5) * 1e6, percentile(jitter, 0.99) * 1e6);
  std::printf(
      "   p99 jitter / pause time (%.2f ms)                               %10.3f  "
      "(target <= 0.1)\n",
      pause_10g * 1e3, percentile(jitter, 0.99) / pause_10g);

  // 3. Single frames against a DSCP-26 UDP flow h0 -> h1.
  std::printf(
      "\n3. pause accuracy at 100 Mbit/s: one pause frame from h1 into a 40 Mbit/s DSCP-26 UDP "
      "flow h0 -> h1\n   (a datagram every 200 us); from the frame's arrival on the switch port "
      "to the arrival of the first datagram it held, over the pause time\n");
  shell("ip netns exec fcpb-h1 iperf3 -s -D -p 5701 --logfile " + dir + "/iperf3.log");
  ::usleep(300 * 1000);
  for (const int quanta : {65535, 16384, 4096, 1024, 256}) {
    const double pause = quanta * 512.0 / kRateBps;
    // Files per case: nothing from an earlier case can be matched.
    const std::string tag = std::to_string(quanta);
    startCapture("fcpb-sw0", "p1", "ether proto 0x8808", dir + "/pause-" + tag);
    startCapture("fcpb-h0", "eth0", "udp port 5701", dir + "/sent-" + tag, true);
    startCapture("fcpb-h1", "eth0", "udp port 5701", dir + "/received-" + tag, true);
    shell(
        "ip netns exec fcpb-h0 iperf3 -c 10.200.0.2 -p 5701 -u -b 40M -l 1000 -S 104 -t 2 "
        "--pacing-timer 100 > /dev/null 2>&1 & sleep 0.8; timeout -s KILL 0.2 " +
        emit + "--quanta " + tag + " --interval-us 10000000 > /dev/null 2>&1; wait");
    stopCaptures();
    const std::vector<double> frames = numbers(shell("cat " + dir + "/pause-" + tag));
    const auto sent = timesById(shell("cat " + dir + "/sent-" + tag));
    const auto received = timesById(shell("cat " + dir + "/received-" + tag));
    if (frames.empty() || sent.empty() || received.empty()) {
      std::printf("   %5d quanta: n/a (pause frames %zu, datagrams sent %zu, received %zu)\n",
                  quanta, frames.size(), sent.size(), received.size());
      continue;
    }
    const double paused_at = frames.front();
    // The IP id repeats within a run (iperf3's first datagrams share ids with later ones): a
    // datagram is matched to the latest one sent with its id before it arrived.
    std::map<std::string, std::vector<double>> sent_times;
    bool sent_within_pause = false;
    for (const auto& [time, id] : sent) {
      sent_times[id].push_back(time);
      sent_within_pause |= time >= paused_at && time < paused_at + pause / 2;
    }
    // The held datagram that waited longest, the first one held, arrives when the port resumes.
    // Datagrams sent after the frame arrived that still went through show how long the switch
    // took to close the port.
    double first_held = 0;
    double longest_held = 0;
    double last_passed = -1;  // after the frame's arrival, the latest send that went through
    std::vector<double> delays;
    for (const auto& [time, id] : received) {
      auto it = sent_times.find(id);
      if (it == sent_times.end()) continue;
      auto after = std::upper_bound(it->second.begin(), it->second.end(), time);
      if (after == it->second.begin()) continue;
      const double sent_at = *std::prev(after);
      const double delay = time - sent_at;
      delays.push_back(delay);
      if (sent_at < paused_at) continue;
      if (time < paused_at + pause / 2) {
        last_passed = std::max(last_passed, sent_at - paused_at);
      } else if (delay > longest_held) {
        longest_held = delay;
        first_held = time;
      }
    }
    const double longest = delays.empty() ? 0 : *std::max_element(delays.begin(), delays.end());
    if (!sent_within_pause || first_held == 0) {
      std::printf("   %5d quanta: n/a (no datagram was sent during the pause's first half)\n",
                  quanta);
      continue;
    }
    const double stall = first_held - paused_at;
    char passed[64] = "none passed";
    if (last_passed >= 0) {
      std::snprintf(passed, sizeof(passed), "passed until %.3f ms", last_passed * 1e3);
    }
    std::printf(
        "   %5d quanta (%8.3f ms): released after %8.3f ms (%s; longest one-way delay %8.3f "
        "ms, median %.3f ms, %zu datagrams)   ratio %6.3f  (target 0.9-1.1)\n",
        quanta, pause * 1e3, stall * 1e3, passed, longest * 1e3, percentile(delays, 0.5) * 1e3,
        delays.size(), stall / pause);
  }
  shell("pkill -f 'iperf3 -s -D -p 5701'");
  (void)lab.down();
  std::filesystem::remove_all(dir);
  return 0;
}
