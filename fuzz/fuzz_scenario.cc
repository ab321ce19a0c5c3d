// libFuzzer target: scenario JSON -> parseScenario -> validateKindsAndTiming, and the codec's
// round trip. Any input must come back as a Status naming the problem; what parses must encode
// and parse again to the same document. A violation aborts, so the fuzzer reports it.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "scenarios/model.h"
#include "scenarios/validate.h"

namespace {

using fabric_chaos::core::Status;
using fabric_chaos::core::StatusCode;
using nlohmann::json;
namespace scenarios = fabric_chaos::scenarios;

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "fuzz_scenario: %s\n", what.c_str());
  std::abort();
}

// The kinds the server registers, with a parameter check in the style of the real injectors.
scenarios::KindCatalog catalog() {
  scenarios::KindCatalog kinds;
  kinds.kinds = {"link_flap", "netem", "packet_loss"};
  kinds.validate_params = [](const std::string& kind, const json& params) {
    if (kind == "packet_loss") {
      auto it = params.find("percent");
      if (it == params.end() || !it->is_number() || *it < 0 || *it > 100) {
        return Status(StatusCode::kInvalidArgument, "params.percent: a number in [0, 100]");
      }
    }
    return Status::ok();
  };
  return kinds;
}

void expectNamedError(const Status& status, const char* step) {
  if (status.isOk()) return;
  if (status.message().empty()) fail(std::string(step) + ": an error without a message");
  if (status.code() != StatusCode::kInvalidArgument &&
      status.code() != StatusCode::kUnprocessable) {
    fail(std::string(step) + ": unexpected code for bad input: " + status.toString());
  }
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
  static const scenarios::KindCatalog kinds = catalog();
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
