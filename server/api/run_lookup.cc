#include "server/api/run_lookup.h"

#include <cmath>
#include <cstdlib>

#include "server/api/util.h"

namespace fabric_chaos::api::internal {

core::Result<int64_t> runIdFrom(const Call& call) {
  return parseInteger(call.params.at(0), "run id");
}

core::Result<store::RunRecord> runFrom(Context& ctx, const Call& call) {
  auto id = runIdFrom(call);
  if (!id) return id.status();
  return ctx.deps.store->getRun(id.value());
}

core::Result<std::optional<double>> runMsFrom(const Call& call, const std::string& key) {
  auto it = call.query.find(key);
  if (it == call.query.end()) return std::optional<double>();
  char* end = nullptr;
  const double value = std::strtod(it->second.c_str(), &end);
  if (it->second.empty() || end != it->second.c_str() + it->second.size() ||
      !std::isfinite(value)) {
    return core::Status(
        core::StatusCode::kInvalidArgument,
        key + ": must be a number of run-relative milliseconds, got \"" + it->second + "\"");
  }
  return std::optional<double>(value);
}

}  // namespace fabric_chaos::api::internal
