#include "lab/switch_telemetry.h"

#include <fstream>
#include <map>

#include "injectors/sys/ecn_marker.h"
#include "lab/pfc_agent.h"

namespace fabric_chaos::lab {
namespace {

// The class queues port_model.h builds on every modelled port, by their qdisc handles (tc reads
// "10:" as hexadecimal: major 0x10).
struct ClassQueue {
  uint32_t handle;
  const char* name;
};
constexpr ClassQueue kQueues[] = {{0x00100000, "lossless"}, {0x00200000, "best_effort"}};

class KernelSwitchTelemetry : public scenarios::SwitchTelemetry {
 public:
  explicit KernelSwitchTelemetry(std::string state_dir) : state_dir_(std::move(state_dir)) {}

  core::Result<std::vector<core::TelemetryPoint>> read(const scenarios::Switch& sw) override {
    if (!sw.egress) return std::vector<core::TelemetryPoint>{};
    auto qdiscs = sys::readQdiscCounters(sw.netns);
    if (!qdiscs.isOk()) return qdiscs.status().withContext("switch " + sw.name + " telemetry");
    std::vector<PortMarks> marks;
    if (sw.egress->ecn) {
      for (const std::string& port : sw.ports) {
        auto read = sys::readEcnMarks(sw.netns, port);
        if (!read.isOk()) {
          return read.status().withContext("switch " + sw.name + " ECN marks of " + port);
        }
        marks.push_back({port, read->lossless.marked, read->best_effort.marked});
      }
    }
    std::vector<core::TelemetryPoint> points = switchTelemetryPoints(sw, *qdiscs, marks);
    if (sw.egress->pfc) {
      // Rewritten by rename every 200 ms: a reading sees a whole document or the one before.
      std::ifstream in(pfcStatsFile(state_dir_, sw.netns));
      const nlohmann::json stats = nlohmann::json::parse(in, nullptr, false);
      if (!stats.is_discarded()) {
        for (auto& point : pfcTelemetryPoints(sw, stats)) points.push_back(std::move(point));
      }
    }
    return points;
  }

 private:
  std::string state_dir_;
};

}  // namespace

std::vector<core::TelemetryPoint> switchTelemetryPoints(
    const scenarios::Switch& sw, const std::vector<sys::QdiscCounters>& qdiscs,
    const std::vector<PortMarks>& marks) {
  std::map<std::pair<std::string, uint32_t>, const sys::QdiscCounters*> by_port;
  for (const sys::QdiscCounters& q : qdiscs) by_port[{q.ifname, q.handle}] = &q;
  std::map<std::string, const PortMarks*> marks_by_port;
  for (const PortMarks& m : marks) marks_by_port[m.port] = &m;

  std::vector<core::TelemetryPoint> points;
  for (const std::string& port : sw.ports) {
    for (const ClassQueue& queue : kQueues) {
      auto it = by_port.find({port, queue.handle});
      if (it == by_port.end()) continue;  // not modelled (yet, or any more): nothing to read
      const sys::QdiscCounters& q = *it->second;
      const std::string source =
          core::telemetrySourceName(core::TelemetrySource::switchQueue(sw.name, port, queue.name));
      auto add = [&](const char* metric, uint64_t value) {
        points.push_back({0, source, metric, static_cast<int64_t>(value)});
      };
      add("tx_bytes", q.bytes);
      add("tx_packets", q.packets);
      add("drops", q.drops);
      add("backlog_bytes", q.backlog_bytes);
      if (auto m = marks_by_port.find(port); m != marks_by_port.end()) {
        add("ecn_marked",
            queue.handle == kQueues[0].handle ? m->second->lossless : m->second->best_effort);
      }
    }
  }
  return points;
}

std::vector<core::TelemetryPoint> pfcTelemetryPoints(const scenarios::Switch& sw,
                                                     const nlohmann::json& stats) {
  std::vector<core::TelemetryPoint> points;
  if (!sw.egress || !sw.egress->pfc || !stats.is_object() || !stats.contains("ports") ||
      !stats["ports"].is_object()) {
    return points;
  }
  const std::string prio = "prio" + std::to_string(sw.egress->pfc->priority);
  for (const std::string& port : sw.ports) {
    auto it = stats["ports"].find(port);
    if (it == stats["ports"].end() || !it->is_object()) continue;
    const std::string source =
        core::telemetrySourceName(core::TelemetrySource::switchQueue(sw.name, port, "lossless"));
    auto add = [&](const char* metric, const std::string& key) {
      auto value = it->find(key);
      if (value != it->end() && value->is_number_integer()) {
        points.push_back({0, source, metric, value->get<int64_t>()});
      }
    };
    add("pfc_rx_pause", "rx_" + prio + "_pause");
    add("pfc_paused_us", "rx_" + prio + "_pause_duration");
    add("pfcwd_storms", "pfcwd_" + prio + "_storm_detected");
    add("pfcwd_dropped_frames", "pfcwd_" + prio + "_dropped_frames");
    // CLOCK_MONOTONIC nanoseconds, 0 for never: the run's sampler puts them on its clock.
    add("pfcwd_detected_at_us", "pfcwd_" + prio + "_last_detected_ns");
    add("pfcwd_restored_at_us", "pfcwd_" + prio + "_last_restored_ns");
  }
  return points;
}

std::unique_ptr<scenarios::SwitchTelemetry> makeKernelSwitchTelemetry(std::string state_dir) {
  return std::make_unique<KernelSwitchTelemetry>(std::move(state_dir));
}

}  // namespace fabric_chaos::lab
