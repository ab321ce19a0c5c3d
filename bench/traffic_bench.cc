// How close `fabric-chaos traffic` comes to iperf3 (a third-party program) on the same modelled
// lab path, printed as the ratio "traffic generator goodput / iperf3 goodput" (target >= 0.9),
// for each rate given (default 100mbit and 1gbit). One TCP flow each, h0 -> h1 through one switch
// port of a two-host star lab; both measured over 5 s after a 1 s slow-start, in three alternate
// rounds of one run. Root only. It builds its lab under its own prefix (fctb-*) and state directory
// and removes both on every exit. Needs iperf3 and the fabric-chaos binary (default:
// ../app/fabric-chaos next to this program; or FC_BINARY).
// Run: flock /tmp/fc-fabric.lock ./build/bench/traffic_bench [RATE...]

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/bench_lab.h"
#include "bench/bench_shell.h"
#include "lab/netns_lab.h"
#include "lab/port_model.h"

namespace {

using nlohmann::json;

constexpr int kRounds = 3;

using fabric_chaos::bench::shell;

const char* const kSender = "fctb-h0";
const char* const kReceiver = "fctb-h1";
const char* const kReceiverAddress = "10.200.0.2";

// iperf3 TCP, h0 -> h1, 5 s after 1 s left out: the receiver's goodput in bit/s (0 on failure).
double iperf3Goodput(const std::string& dir) {
  shell(std::string("ip netns exec ") + kReceiver + " iperf3 -s -D -1 -p 5601 --logfile " + dir +
        "/iperf3.log");
  ::usleep(300 * 1000);
  const json report = json::parse(shell(std::string("ip netns exec ") + kSender + " iperf3 -J -c " +
                                        kReceiverAddress + " -p 5601 -t 5 -O 1"),
                                  nullptr, false);
  if (report.is_discarded() || !report.contains("end")) return 0;
  return report["end"]["sum_received"]["bits_per_second"].get<double>();
}

// `fabric-chaos traffic`, one flow h0 -> h1 for 7 s: the sink's own goodput in bit/s over the
// 5 s that follow the first second of bytes, from its reports' byte totals (0 on failure).
double generatorGoodput(const std::string& binary, const std::string& dir) {
  const std::string out = dir + "/sink.out";
  std::string pid =
      shell(std::string("ip netns exec ") + kReceiver + " " + binary + " traffic sink --listen " +
            kReceiverAddress + ":6000 > " + out + " 2>&1 & echo $!");
  ::usleep(300 * 1000);
  shell(std::string("ip netns exec ") + kSender + " " + binary + " traffic source --connect " +
        kReceiverAddress + ":6000 --duration-s 7 > /dev/null 2>&1");
  while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
  // The sink's final report, and its port free for the next round.
  shell("kill -TERM " + pid + "; while kill -0 " + pid + " 2>/dev/null; do sleep 0.1; done");
  std::vector<json> lines;
  std::ifstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    json doc = json::parse(line, nullptr, false);
    if (!doc.is_discarded() && doc.value("role", "") == "sink") lines.push_back(std::move(doc));
  }
  int64_t started_ms = -1;
  for (const json& report : lines) {
    if (report["bytes"].get<int64_t>() > 0) {
      started_ms = report["t_ms"].get<int64_t>();
      break;
    }
  }
  if (started_ms < 0) return 0;
  const json* first = nullptr;
  const json* last = nullptr;
  for (const json& report : lines) {
    const int64_t t = report["t_ms"].get<int64_t>();
    if (first == nullptr && t >= started_ms + 1000) first = &report;
    if (t <= started_ms + 6000) last = &report;
  }
  if (first == nullptr || last == nullptr) return 0;
  const double seconds =
      static_cast<double>((*last)["t_ms"].get<int64_t>() - (*first)["t_ms"].get<int64_t>()) / 1e3;
  if (seconds <= 0) return 0;
  return static_cast<double>((*last)["bytes"].get<int64_t>() - (*first)["bytes"].get<int64_t>()) *
         8 / seconds;
}

}  // namespace

int main(int argc, char** argv) {
  if (::geteuid() != 0) {
    std::fprintf(stderr, "traffic_bench: needs root (it builds network namespaces)\n");
    return 2;
  }
  std::string binary =
      std::getenv("FC_BINARY") != nullptr
          ? std::getenv("FC_BINARY")
          : (std::filesystem::path(argv[0]).parent_path().parent_path() / "app" / "fabric-chaos")
                .string();
  if (!std::filesystem::exists(binary) || shell("command -v iperf3").empty()) {
    std::fprintf(stderr, "traffic_bench: needs %s and iperf3\n", binary.c_str());
    return 2;
  }
  std::vector<std::string> rates;
  for (int i = 1; i < argc; ++i) rates.push_back(argv[i]);
  if (rates.empty()) rates = {"100mbit", "1gbit"};

  char dir_template[] = "/tmp/fc-traffic-bench-XXXXXX";
  const std::string dir = ::mkdtemp(dir_template);
  std::printf(
      "traffic_bench: star lab, 2 hosts, switch ports modelled (htb line, two classes, 512 KiB "
      "bfifo each); one TCP flow h0 -> h1, %d alternate rounds; %ld cores\n",
      kRounds, ::sysconf(_SC_NPROCESSORS_ONLN));
  int status = 0;
  for (const std::string& rate_text : rates) {
    auto rate = fabric_chaos::lab::parseLinkRate(rate_text);
    if (!rate.isOk()) {
      std::fprintf(stderr, "%s\n", rate.status().message().c_str());
      status = 2;
      break;
    }
    const fabric_chaos::lab::LabOptions options =
        fabric_chaos::bench::modelledStar(2, "fctb", "traffic-bench", dir + "/state", *rate);
    fabric_chaos::bench::BenchLab lab(options);
    if (!lab.up()) {
      status = 2;
      break;
    }
    const double modelled = static_cast<double>(*rate);
    double iperf3_sum = 0;
    double ours_sum = 0;
    std::printf("\nports at %s:\n", fabric_chaos::lab::describeEgress(*options.egress).c_str());
    for (int round = 0; round < kRounds; ++round) {
      const double iperf3 = iperf3Goodput(dir);
      const double ours = generatorGoodput(binary, dir);
      iperf3_sum += iperf3;
      ours_sum += ours;
      std::printf("  round %d: iperf3 %9.1f Mbit/s   fabric-chaos traffic %9.1f Mbit/s\n",
                  round + 1, iperf3 / 1e6, ours / 1e6);
    }
    const double iperf3 = iperf3_sum / kRounds;
    const double ours = ours_sum / kRounds;
    std::printf(
        "  iperf3 goodput, 1 flow                  %9.1f Mbit/s   %.3f of the modelled rate\n",
        iperf3 / 1e6, iperf3 / modelled);
    std::printf(
        "  traffic generator goodput, 1 flow       %9.1f Mbit/s   %.3f of the modelled rate\n",
        ours / 1e6, ours / modelled);
    std::printf("  traffic generator goodput / iperf3 goodput          %.3f   (target >= 0.9)\n",
                iperf3 > 0 ? ours / iperf3 : 0.0);
    if (!lab.down()) status = 2;
  }
  std::filesystem::remove_all(dir);
  const bool left = !shell("ip netns list | grep '^fctb-'").empty();
  std::printf("cleanup: %s\n", left ? "fctb-* namespaces LEFT BEHIND" : "no fctb-* namespace left");
  return left ? 2 : status;
}
