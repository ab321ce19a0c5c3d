#include "injectors/rdma/ip_snapshot.h"

#include <sys/socket.h>

#include <cstdint>
#include <limits>

namespace fabric_chaos::injectors {
namespace {

using nlohmann::json;

core::Status invalid(const std::string& path, const std::string& problem) {
  return core::Status(core::StatusCode::kInvalidArgument, path + ": " + problem);
}

// RTAX_* ids: a byte in the kernel's RTA_METRICS.
constexpr uint64_t kMaxMetricId = 255;

// A JSON integer in 0..max, whether it was built signed (in memory) or parsed unsigned.
bool inRange(const json& value, uint64_t max) {
  if (!value.is_number_integer()) return false;
  if (!value.is_number_unsigned() && value.get<int64_t>() < 0) return false;
  return value.get<uint64_t>() <= max;
}

std::string familyName(int family) { return family == AF_INET6 ? "inet6" : "inet"; }

core::Status readFamily(const json& doc, const std::string& path, int& out) {
  const std::string key = path + ".family";
  auto it = doc.find("family");
  if (it == doc.end() || !it->is_string()) return invalid(key, "must be inet or inet6");
  if (*it == "inet") {
    out = AF_INET;
  } else if (*it == "inet6") {
    out = AF_INET6;
  } else {
    return invalid(key, "must be inet or inet6");
  }
  return core::Status::ok();
}

core::Status readString(const json& doc, const std::string& path, const char* name,
                        std::string& out) {
  auto it = doc.find(name);
  if (it == doc.end()) return core::Status::ok();  // absent: "" (none)
  if (!it->is_string()) return invalid(path + "." + name, "must be a string");
  out = it->get<std::string>();
  return core::Status::ok();
}

template <typename T>
core::Status readInteger(const json& doc, const std::string& path, const char* name, T& out) {
  auto it = doc.find(name);
  if (it == doc.end()) return core::Status::ok();  // absent: the default
  if (!inRange(*it, static_cast<uint64_t>(std::numeric_limits<T>::max()))) {
    return invalid(path + "." + name,
                   "must be an integer in 0.." + std::to_string(std::numeric_limits<T>::max()));
  }
  out = static_cast<T>(it->get<uint64_t>());
  return core::Status::ok();
}

json toJson(const sys::IpRoute& route) {
  json metrics = json::array();
  for (const auto& [metric, value] : route.metrics) metrics.push_back({metric, value});
  return json{{"family", familyName(route.family)},
              {"table", route.table},
              {"destination", route.destination},
              {"destination_len", route.destination_len},
              {"gateway", route.gateway},
              {"preferred_source", route.preferred_source},
              {"priority", route.priority},
              {"protocol", route.protocol},
              {"scope", route.scope},
              {"type", route.type},
              {"tos", route.tos},
              {"metrics", metrics}};
}

core::Result<sys::IpRoute> ipRouteFromJson(const json& doc, const std::string& path) {
  if (!doc.is_object()) return invalid(path, "must be an object");
  sys::IpRoute route;
  FC_RETURN_IF_ERROR(readFamily(doc, path, route.family));
  FC_RETURN_IF_ERROR(readInteger(doc, path, "table", route.table));
  FC_RETURN_IF_ERROR(readString(doc, path, "destination", route.destination));
  FC_RETURN_IF_ERROR(readInteger(doc, path, "destination_len", route.destination_len));
  FC_RETURN_IF_ERROR(readString(doc, path, "gateway", route.gateway));
  FC_RETURN_IF_ERROR(readString(doc, path, "preferred_source", route.preferred_source));
  FC_RETURN_IF_ERROR(readInteger(doc, path, "priority", route.priority));
  FC_RETURN_IF_ERROR(readInteger(doc, path, "protocol", route.protocol));
  FC_RETURN_IF_ERROR(readInteger(doc, path, "scope", route.scope));
  FC_RETURN_IF_ERROR(readInteger(doc, path, "type", route.type));
  FC_RETURN_IF_ERROR(readInteger(doc, path, "tos", route.tos));
  if (auto it = doc.find("metrics"); it != doc.end()) {
    if (!it->is_array()) return invalid(path + ".metrics", "must be a list of [id, value]");
    for (const json& pair : *it) {
      if (!pair.is_array() || pair.size() != 2 || !inRange(pair[0], kMaxMetricId) ||
          !inRange(pair[1], std::numeric_limits<uint32_t>::max())) {
        return invalid(path + ".metrics", "must be a list of [id, value]");
      }
      route.metrics.emplace_back(pair[0].get<int>(), pair[1].get<uint32_t>());
    }
  }
  return route;
}

bool alreadyThere(const core::Status& status) {
  return status.isOk() || status.code() == core::StatusCode::kAlreadyExists;
}

}  // namespace

core::Result<IpSnapshot> takeIpSnapshot(sys::IpConfig& ip, const std::string& ifname) {
  IpSnapshot snapshot;
  auto addresses = ip.addresses("", ifname);
  if (!addresses) return addresses.status();
  auto routes = ip.routes("", ifname);
  if (!routes) return routes.status();
  snapshot.addresses = std::move(*addresses);
  snapshot.routes = std::move(*routes);
  return snapshot;
}

core::Status restoreIpSnapshot(sys::IpConfig& ip, const std::string& ifname,
                               const IpSnapshot& snapshot, const sys::IpAddress* required) {
  core::Status first_failure;
  auto note = [&](const core::Status& status) {
    if (!alreadyThere(status) && first_failure.isOk()) first_failure = status;
  };
  if (required != nullptr) {
    const core::Status added = ip.addAddress("", ifname, *required);
    // Without the address nothing else of the snapshot can come back.
    if (!alreadyThere(added)) return added;
  }
  for (const sys::IpAddress& address : snapshot.addresses) {
    if (required != nullptr && address.family == required->family &&
        address.local == required->local) {
      continue;
    }
    if (!sys::isStaticAddress(address) || sys::isIpv6LinkLocal(address)) continue;
    note(ip.addAddress("", ifname, address));
  }
  // Two rounds: a route may need another one (its gateway reachable through it) added first.
  std::vector<const sys::IpRoute*> pending;
  for (const sys::IpRoute& route : snapshot.routes) {
    if (!sys::isKernelRoute(route)) pending.push_back(&route);
  }
  for (int round = 0; round < 2 && !pending.empty(); ++round) {
    std::vector<const sys::IpRoute*> failed;
    core::Status last;
    for (const sys::IpRoute* route : pending) {
      const core::Status added = ip.addRoute("", ifname, *route);
      if (alreadyThere(added)) continue;
      failed.push_back(route);
      if (last.isOk()) last = added;
    }
    pending = std::move(failed);
    if (round == 1 && !pending.empty()) note(last);
  }
  return first_failure;
}

json toJson(const sys::IpAddress& address) {
  return json{{"family", familyName(address.family)},
              {"local", address.local},
              {"prefix_len", address.prefix_len},
              {"peer", address.peer},
              {"broadcast", address.broadcast},
              {"scope", address.scope},
              {"flags", address.flags},
              {"label", address.label},
              {"valid_lifetime", address.valid_lifetime},
              {"preferred_lifetime", address.preferred_lifetime}};
}

json toJson(const IpSnapshot& snapshot) {
  json addresses = json::array();
  for (const sys::IpAddress& address : snapshot.addresses) addresses.push_back(toJson(address));
  json routes = json::array();
  for (const sys::IpRoute& route : snapshot.routes) routes.push_back(toJson(route));
  return json{{"addresses", addresses}, {"routes", routes}};
}

core::Result<sys::IpAddress> ipAddressFromJson(const json& doc, const std::string& path) {
  if (!doc.is_object()) return invalid(path, "must be an object");
  sys::IpAddress address;
  FC_RETURN_IF_ERROR(readFamily(doc, path, address.family));
  FC_RETURN_IF_ERROR(readString(doc, path, "local", address.local));
  if (address.local.empty()) return invalid(path + ".local", "required");
  FC_RETURN_IF_ERROR(readInteger(doc, path, "prefix_len", address.prefix_len));
  if (address.prefix_len > (address.family == AF_INET ? 32 : 128)) {
    return invalid(path + ".prefix_len", "longer than the address");
  }
  FC_RETURN_IF_ERROR(readString(doc, path, "peer", address.peer));
  FC_RETURN_IF_ERROR(readString(doc, path, "broadcast", address.broadcast));
  FC_RETURN_IF_ERROR(readInteger(doc, path, "scope", address.scope));
  FC_RETURN_IF_ERROR(readInteger(doc, path, "flags", address.flags));
  FC_RETURN_IF_ERROR(readString(doc, path, "label", address.label));
  FC_RETURN_IF_ERROR(readInteger(doc, path, "valid_lifetime", address.valid_lifetime));
  FC_RETURN_IF_ERROR(readInteger(doc, path, "preferred_lifetime", address.preferred_lifetime));
  return address;
}

core::Result<IpSnapshot> ipSnapshotFromJson(const json& doc, const std::string& path) {
  if (!doc.is_object()) return invalid(path, "must be an object");
  IpSnapshot snapshot;
  auto addresses = doc.find("addresses");
  auto routes = doc.find("routes");
  if (addresses == doc.end() || !addresses->is_array()) {
    return invalid(path + ".addresses", "must be a list");
  }
  if (routes == doc.end() || !routes->is_array())
    return invalid(path + ".routes", "must be a list");
  for (size_t i = 0; i < addresses->size(); ++i) {
    auto address =
        ipAddressFromJson((*addresses)[i], path + ".addresses[" + std::to_string(i) + "]");
    if (!address) return address.status();
    snapshot.addresses.push_back(std::move(*address));
  }
  for (size_t i = 0; i < routes->size(); ++i) {
    auto route = ipRouteFromJson((*routes)[i], path + ".routes[" + std::to_string(i) + "]");
    if (!route) return route.status();
    snapshot.routes.push_back(std::move(*route));
  }
  return snapshot;
}

}  // namespace fabric_chaos::injectors
