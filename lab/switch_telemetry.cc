#include "lab/switch_telemetry.h"

#include <map>

#include "injectors/sys/ecn_marker.h"

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
    return switchTelemetryPoints(sw, *qdiscs, marks);
  }
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

std::unique_ptr<scenarios::SwitchTelemetry> makeKernelSwitchTelemetry() {
  return std::make_unique<KernelSwitchTelemetry>();
}

}  // namespace fabric_chaos::lab
