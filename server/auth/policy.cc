#include "server/auth/policy.h"

namespace fabric_chaos::auth {

bool isMutatingMethod(std::string_view method) { return method != "GET" && method != "HEAD"; }

std::optional<store::Role> requiredRole(std::string_view method,
                                        const std::vector<std::string>& segments) {
  // Load balancers and probes check liveness without credentials.
  if (segments.size() == 1 && segments[0] == "healthz") return std::nullopt;
  // The API's own description (GET /v1/openapi.json) is read by tools before they hold a token.
  // Reads only: any other method is a mutation like everywhere else (and audited as one).
  if (segments.size() == 2 && segments[0] == "v1" && segments[1] == "openapi.json" &&
      !isMutatingMethod(method)) {
    return std::nullopt;
  }
  // Token management and the audit log reveal or grant access: admin for every method, reads
  // included.
  if (segments.size() >= 2 && segments[0] == "v1" &&
      (segments[1] == "tokens" || segments[1] == "audit")) {
    return store::Role::kAdmin;
  }
  return isMutatingMethod(method) ? store::Role::kOperator : store::Role::kViewer;
}

}  // namespace fabric_chaos::auth
