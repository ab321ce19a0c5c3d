#pragma once
// What the /v1/runs/{id}/... handlers share: the run the path names, and the run-relative time
// filters of their query strings.

#include <optional>
#include <string>

#include "server/api/handlers.h"

namespace fabric_chaos::api::internal {

// The path's run id: kInvalidArgument for a bad one.
core::Result<int64_t> runIdFrom(const Call& call);
// The run the path names: kInvalidArgument for a bad id, kNotFound.
core::Result<store::RunRecord> runFrom(Context& ctx, const Call& call);
// The query parameter `key` as run-relative milliseconds; nullopt when absent, kInvalidArgument
// naming it when it is not a finite number.
core::Result<std::optional<double>> runMsFrom(const Call& call, const std::string& key);

}  // namespace fabric_chaos::api::internal
