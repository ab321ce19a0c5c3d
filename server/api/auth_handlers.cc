// /v1/whoami, /v1/tokens[/ID] and /v1/audit. Api::handle has authenticated and authorized the
// caller already (tokens and audit need admin); these handlers only validate input and talk to
// the store. A token's secret appears in exactly one response: the 201 that created it.

#include <limits>
#include <mutex>

#include "server/api/handlers.h"
#include "server/api/util.h"
#include "server/auth/random_source.h"
#include "server/auth/tokens.h"

namespace fabric_chaos::api::internal {

using core::Status;
using core::StatusCode;
using nlohmann::json;

namespace {

constexpr size_t kMaxTokenNameLength = 64;
constexpr int kDefaultAuditLimit = 100;
constexpr int kMaxAuditLimit = 1000;

// Serializes "is this the last active admin?" with the revocation itself, so that two admins
// revoking each other's tokens at once cannot leave none. std::mutex is constant-initialized:
// no global constructor runs.
std::mutex revoke_mu;

Status checkTokenName(const json& value) {
  if (!value.is_string()) {
    return Status(StatusCode::kInvalidArgument,
                  std::string("name: must be a string, got ") + value.type_name());
  }
  const std::string name = value.get<std::string>();
  if (name.empty() || name.size() > kMaxTokenNameLength) {
    return Status(StatusCode::kInvalidArgument,
                  "name: must be 1 to " + std::to_string(kMaxTokenNameLength) +
                      " characters, got " + std::to_string(name.size()));
  }
  for (char c : name) {
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '@' || c == '-';
    if (!ok) {
      return Status(StatusCode::kInvalidArgument,
                    "name: only letters, digits and . _ @ - are allowed, got \"" + name + "\"");
    }
  }
  return Status::ok();
}

json tokenJson(const store::TokenRecord& token) {
  // Never the hash: it is not a secret by itself, but there is no reason to hand it out.
  return json{{"id", token.id},
              {"name", token.name},
              {"role", store::roleName(token.role)},
              {"created_ms", token.created_ms},
              {"revoked_ms", token.revoked_ms},
              {"last_used_ms", token.last_used_ms}};
}

json auditJson(const store::AuditRecord& record) {
  return json{{"id", record.id},         {"wall_ms", record.wall_ms}, {"actor", record.actor},
              {"role", record.role},     {"method", record.method},   {"path", record.path},
              {"status", record.status}, {"detail", record.detail}};
}

// An integer query parameter in [low, high], or `fallback` when absent.
core::Result<int64_t> boundedQuery(const Call& call, const std::string& key, int64_t fallback,
                                   int64_t low, int64_t high) {
  auto it = call.query.find(key);
  if (it == call.query.end()) return fallback;
  auto value = parseInteger(it->second, key);
  if (!value || value.value() < low || value.value() > high) {
    return Status(StatusCode::kInvalidArgument,
                  key + ": must be an integer from " + std::to_string(low) + " to " +
                      std::to_string(high) + ", got \"" + it->second + "\"");
  }
  return value;
}

}  // namespace

Response whoami(Context& ctx, const Call&) {
  return jsonResponse(200, json{{"name", ctx.caller.name},
                                {"role", store::roleName(ctx.caller.role)},
                                {"auth", ctx.deps.require_auth}});
}

Response listTokens(Context& ctx, const Call&) {
  auto tokens = ctx.deps.store->listTokens();
  if (!tokens) return errorResponse(tokens.status());
  json out = json::array();
  for (const store::TokenRecord& token : tokens.value()) out.push_back(tokenJson(token));
  return jsonResponse(200, json{{"tokens", out}});
}

Response createToken(Context& ctx, const Call& call) {
  auto body = parseJsonObject(call.request.body);
  if (!body) return errorResponse(body.status());
  for (const auto& [key, value] : body->items()) {
    if (key != "name" && key != "role") {
      return errorResponse(Status(StatusCode::kInvalidArgument,
                                  "unknown field \"" + key + "\"; expected name, role"));
    }
  }
  auto name = body->find("name");
  if (name == body->end()) {
    return errorResponse(
        Status(StatusCode::kInvalidArgument, "name: required (who will use the token)"));
  }
  if (Status s = checkTokenName(*name); !s.isOk()) return errorResponse(s);
  auto role_field = body->find("role");
  if (role_field == body->end()) {
    return errorResponse(
        Status(StatusCode::kInvalidArgument, "role: required, one of viewer, operator, admin"));
  }
  if (!role_field->is_string()) {
    return errorResponse(Status(StatusCode::kInvalidArgument,
                                std::string("role: must be one of viewer, operator, admin, got ") +
                                    role_field->type_name()));
  }
  auto role = store::parseRole(role_field->get<std::string>());
  if (!role) return errorResponse(role.status());

  auto random = auth::makeSystemRandomSource();
  auto issued = auth::issueToken(*ctx.deps.store, *random, name->get<std::string>(), *role);
  if (!issued) return errorResponse(issued.status());
  return jsonResponse(201, json{{"id", issued->id},
                                {"name", name->get<std::string>()},
                                {"role", store::roleName(*role)},
                                {"token", issued->secret}});
}

Response revokeToken(Context& ctx, const Call& call) {
  auto id = parseInteger(call.params.at(0), "token id");
  if (!id) return errorResponse(id.status());
  std::lock_guard<std::mutex> lock(revoke_mu);
  auto tokens = ctx.deps.store->listTokens();
  if (!tokens) return errorResponse(tokens.status());
  const store::TokenRecord* target = nullptr;
  for (const store::TokenRecord& token : tokens.value()) {
    if (token.id == id.value()) target = &token;
  }
  if (target == nullptr) {
    return errorResponse(
        Status(StatusCode::kNotFound, "token " + std::to_string(id.value()) + " not found"));
  }
  if (target->revoked_ms == 0 && target->role == store::Role::kAdmin) {
    auto admins = ctx.deps.store->countActiveTokens(store::Role::kAdmin);
    if (!admins) return errorResponse(admins.status());
    if (admins.value() <= 1) {
      return errorResponse(Status(StatusCode::kFailedPrecondition,
                                  "token " + std::to_string(target->id) + " (\"" + target->name +
                                      "\") is the last active admin token; create another "
                                      "admin token first"));
    }
  }
  if (Status s = ctx.deps.store->revokeToken(id.value()); !s.isOk()) return errorResponse(s);
  return jsonResponse(200, json{{"id", id.value()}, {"revoked", true}});
}

Response listAudit(Context& ctx, const Call& call) {
  auto limit = boundedQuery(call, "limit", kDefaultAuditLimit, 1, kMaxAuditLimit);
  if (!limit) return errorResponse(limit.status());
  auto before = boundedQuery(call, "before", 0, 1, std::numeric_limits<int64_t>::max());
  if (!before) return errorResponse(before.status());
  auto records = ctx.deps.store->listAudit(static_cast<int>(limit.value()), before.value());
  if (!records) return errorResponse(records.status());
  json out = json::array();
  for (const store::AuditRecord& record : records.value()) out.push_back(auditJson(record));
  return jsonResponse(200, json{{"entries", out}});
}

}  // namespace fabric_chaos::api::internal
