// libFuzzer target: fabric JSON -> fabricFromJson, the codec's round trip, and target resolution
// (every host, link and label of the fabric on both sides, plus names it does not have), then
// validateForFabric of a scenario aimed at each host. Errors must be Statuses naming the problem.

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "fuzz/fuzz_support.h"
#include "injectors/model/target.h"
#include "scenarios/model.h"
#include "scenarios/topology.h"
#include "scenarios/validate.h"
#include "tests/fakes/fake_kinds.h"

namespace {

using fabric_chaos::core::Status;
using nlohmann::json;
namespace scenarios = fabric_chaos::scenarios;

constexpr char kTarget[] = "fuzz_topology";

[[noreturn]] void fail(const std::string& what) { fabric_chaos::fuzz::fail(kTarget, what); }

// Any code but kInternal: resolution may also answer kNotFound for a name the fabric lacks.
void expectNamedError(const Status& status, const char* step) {
  fabric_chaos::fuzz::expectNamedError(kTarget, status, step, /*input_codes_only=*/false);
}

void resolve(const scenarios::TargetSelector& selector, const scenarios::Fabric& fabric) {
  for (const scenarios::LinkSide side :
       {scenarios::LinkSide::kSwitch, scenarios::LinkSide::kHost, scenarios::LinkSide::kPeer}) {
    scenarios::TargetSelector s = selector;
    s.side = side;
    auto targets = scenarios::resolveTargets(s, fabric);
    if (!targets.isOk()) {
      expectNamedError(targets.status(), "resolveTargets");
      continue;
    }
    if (targets->empty()) fail("resolveTargets succeeded with no target for " + s.describe());
    for (const auto& t : *targets) {
      const fabric_chaos::injectors::InterfaceTarget* interface =
          fabric_chaos::injectors::interfaceOf(t.target);
      if (interface == nullptr || interface->ifname.empty()) {
        fail("resolved a target without an interface for " + s.describe());
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const json doc = json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return 0;
  auto parsed = scenarios::fabricFromJson(doc);
  if (!parsed.isOk()) {
    expectNamedError(parsed.status(), "fabricFromJson");
    return 0;
  }
  const scenarios::Fabric& fabric = *parsed;
  const json encoded = scenarios::toJson(fabric);
  auto again = scenarios::fabricFromJson(encoded);
  if (!again.isOk()) {
    fail("toJson output does not parse again: " + again.status().toString() + "\n" +
         encoded.dump());
  }
  if (scenarios::toJson(*again) != encoded)
    fail("round trip changed the fabric: " + encoded.dump());

  std::vector<scenarios::TargetSelector> selectors;
  auto host = [](const std::string& name) {
    scenarios::TargetSelector s;
    s.host = name;
    return s;
  };
  auto link = [](const std::string& id) {
    scenarios::TargetSelector s;
    s.link = id;
    return s;
  };
  for (const auto& h : fabric.hosts) {
    selectors.push_back(host(h.name));
    for (const auto& [key, value] : h.labels) {
      scenarios::TargetSelector s;
      s.labels = {{key, value}};
      selectors.push_back(s);
    }
  }
  for (const auto& l : fabric.links) selectors.push_back(link(l.id));
  for (const auto& l : fabric.switch_links) {
    selectors.push_back(link(l.id));
    for (const auto& [key, value] : l.labels) {
      scenarios::TargetSelector s;
      s.labels = {{key, value}};
      selectors.push_back(s);
    }
  }
  for (const auto& sw : fabric.switches) {
    for (const auto& [key, value] : sw.labels) {
      scenarios::TargetSelector s;
      s.labels = {{key, value}};
      selectors.push_back(s);
    }
  }
  selectors.push_back(host("no-such-host"));
  selectors.push_back(link("no-such-link"));
  selectors.push_back(scenarios::TargetSelector{});  // nothing set: a clear error
  for (const auto& s : selectors) resolve(s, fabric);

  // A scenario with one link_flap per host, validated against the fabric.
  const scenarios::KindCatalog kinds = fabric_chaos::fakes::fakeKindCatalog({"link_flap"});
  scenarios::Scenario scenario;
  scenario.name = "fuzz";
  int64_t at = 0;
  for (const auto& h : fabric.hosts) {
    scenarios::FaultStep step;
    step.kind = "link_flap";
    step.target = host(h.name);
    step.at_ms = at;
    step.duration_ms = 100;
    at += 200;
    scenario.steps.push_back(step);
    if (scenario.steps.size() >= 16) break;
  }
  expectNamedError(scenarios::validateForFabric(scenario, fabric, kinds), "validateForFabric");
  return 0;
}
