#pragma once
// Who may call what (docs/api.md, "Authentication and roles") as one pure function of the method
// and the decoded path, so that the whole policy is visible and table-tested in one place.
// Anything not listed is denied by default: an unknown method needs operator, an unknown path at
// least viewer. Thread-safe (no state).

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "store/store.h"

namespace fabric_chaos::auth {

// The least role a request needs; std::nullopt when it needs no token at all (/healthz, and
// reading /v1/openapi.json).
// `segments` are the decoded, non-empty path segments ("/v1/runs/7" -> {"v1", "runs", "7"}), the
// same ones the router matches, so that "/v1/%74okens/" is judged as "/v1/tokens".
std::optional<store::Role> requiredRole(std::string_view method,
                                        const std::vector<std::string>& segments);

// True for methods that change state and are therefore always audited (all but GET and HEAD).
bool isMutatingMethod(std::string_view method);

}  // namespace fabric_chaos::auth
