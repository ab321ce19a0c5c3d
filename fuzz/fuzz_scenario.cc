// libFuzzer target: scenario JSON -> parseScenario -> validateKindsAndTiming, and the codec's
// round trip. Any input must come back as a Status naming the problem; what parses must encode
// and parse again to the same document. A violation aborts, so the fuzzer reports it.

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "fuzz/fuzz_support.h"
#include "scenarios/model.h"
#include "scenarios/validate.h"
#include "tests/fakes/fake_kinds.h"

namespace {

using fabric_chaos::core::Status;
using nlohmann::json;
namespace scenarios = fabric_chaos::scenarios;

constexpr char kTarget[] = "fuzz_scenario";

[[noreturn]] void fail(const std::string& what) { fabric_chaos::fuzz::fail(kTarget, what); }

// A scenario's errors are the input's fault: kInvalidArgument or kUnprocessable only.
void expectNamedError(const Status& status, const char* step) {
  fabric_chaos::fuzz::expectNamedError(kTarget, status, step, /*input_codes_only=*/true);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const json doc = json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return 0;
  auto parsed = scenarios::parseScenario(doc);
  if (!parsed.isOk()) {
    expectNamedError(parsed.status(), "parseScenario");
    return 0;
  }
  // The kinds the server registers, with a parameter check in the style of the real injectors.
  static const scenarios::KindCatalog kinds =
      fabric_chaos::fakes::fakeKindCatalog({"link_flap", "netem", "packet_loss"});
  expectNamedError(scenarios::validateKindsAndTiming(*parsed, kinds), "validateKindsAndTiming");
  (void)parsed->plannedDurationMs();
  for (const auto& step : parsed->steps) (void)step.target.describe();

  const json encoded = scenarios::toJson(*parsed);
  auto again = scenarios::parseScenario(encoded);
  if (!again.isOk()) {
    fail("toJson output does not parse again: " + again.status().toString() + "\n" +
         encoded.dump());
  }
  if (scenarios::toJson(*again) != encoded)
    fail("round trip changed the scenario: " + encoded.dump());
  return 0;
}
