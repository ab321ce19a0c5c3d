#pragma once
// A stand-in for the injector registry's scenarios::KindCatalog, for API tests and fuzz targets:
// the kinds it is given, with packet_loss's "percent" checked as the real injector does. Header-
// only; the catalog is a value, its check a pure function.

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "scenarios/validate.h"

namespace fabric_chaos::fakes {

// Every kind's params are accepted except a packet_loss without a number "percent" in [0, 100]:
// missing or not a number is a 400, out of range a 422, as the real kinds answer.
inline scenarios::KindCatalog fakeKindCatalog(std::vector<std::string> kinds) {
  scenarios::KindCatalog catalog;
  catalog.kinds = std::move(kinds);
  catalog.validate_params = [](const std::string& kind, const nlohmann::json& params) {
    if (kind == "packet_loss") {
      auto it = params.find("percent");
      const char* expected = "percent: must be a number in [0, 100]";
      if (it == params.end() || !it->is_number()) {
        return core::Status(core::StatusCode::kInvalidArgument, expected);
      }
      if (*it < 0 || *it > 100) return core::Status(core::StatusCode::kUnprocessable, expected);
    }
    return core::Status::ok();
  };
  return catalog;
}

// The same catalog whatever the fabric: for tests that do not exercise per-fabric agents.
inline scenarios::KindCatalogFor sameForEveryFabric(scenarios::KindCatalog catalog) {
  return [catalog = std::move(catalog)](const scenarios::Fabric&) {
    return core::Result<scenarios::KindCatalog>(catalog);
  };
}

}  // namespace fabric_chaos::fakes
