#include "agent/target_allowlist.h"

#include <algorithm>
#include <variant>

namespace fabric_chaos::agent {
namespace {

using core::Status;
using core::StatusCode;

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

}  // namespace

Status checkTargetAllowed(const injectors::Target& target, const std::vector<std::string>& allowed,
                          const std::vector<std::string>& management, bool empty_allows_any,
                          std::string_view remedy, const RdmaNetdevLookup& rdma_netdev) {
  if (const auto* traffic = std::get_if<injectors::TrafficSetTarget>(&target)) {
    // Traffic flows between interfaces: every endpoint this agent touches must be one it may
    // (a sources part's sink is another host's).
    for (const injectors::InterfaceTarget& endpoint : injectors::localEndpoints(*traffic)) {
      FC_RETURN_IF_ERROR(
          checkTargetAllowed(endpoint, allowed, management, empty_allows_any, remedy));
    }
    return Status::ok();
  }
  if (const auto* port = std::get_if<injectors::RdmaPortTarget>(&target)) {
    const std::string shown = injectors::describe(target);
    if (!rdma_netdev) {
      return Status(StatusCode::kPermissionDenied,
                    "fault target " + shown + " is refused: this agent does not act on RDMA " +
                        "ports (the host's own agent, fabric-chaos agent, does)");
    }
    auto netdev = rdma_netdev(*port);
    if (!netdev.isOk()) return netdev.status().withContext("fault target " + shown);
    if (netdev->empty()) {
      return Status(StatusCode::kPermissionDenied,
                    "fault target " + shown + " is refused: the port has no netdev (native " +
                        "InfiniBand), and this agent's allowlist names netdevs");
    }
    injectors::InterfaceTarget carrier;
    carrier.ifname = *netdev;
    Status verdict = checkTargetAllowed(carrier, allowed, management, empty_allows_any, remedy);
    if (verdict.isOk()) return verdict;
    return Status(verdict.code(),
                  "fault target " + shown + " sends through " + *netdev + ": " + verdict.message());
  }
  const injectors::TargetType type = injectors::typeOf(target);
  if (type == injectors::TargetType::kProcess) {
    // The verbs kinds act only on programs that loaded the verbs fault library and opened its
    // control socket in this agent's own directory (mode 0700): that is the program's consent,
    // and they touch nothing else of the host.
    return Status::ok();
  }
  if (type == injectors::TargetType::kIbPort || type == injectors::TargetType::kSubnetManager) {
    // Listed by their lock key ("ib/<netns>/<node>/<port>", "sm/node/<node>/<netns>"): the
    // serve allowlist derives them from the IB fabrics it knows.
    const std::string key = injectors::lockKeys(target).front();
    if ((allowed.empty() && empty_allows_any) ||
        std::find(allowed.begin(), allowed.end(), key) != allowed.end()) {
      return Status::ok();
    }
    return Status(StatusCode::kPermissionDenied,
                  "fault target " + injectors::describe(target) + " (" + key +
                      ") is not on this agent's allowlist; " + std::string(remedy));
  }
  const injectors::InterfaceTarget* interface = injectors::interfaceOf(target);
  if (interface == nullptr) {
    // The allowlist names interfaces only; until a fault family acting on other targets brings
    // its own entries, refusing them is the only answer that cannot hurt a host.
    return Status(StatusCode::kPermissionDenied,
                  "fault target " + injectors::describe(target) +
                      " is refused: this agent's allowlist has no entries for " +
                      injectors::toString(injectors::typeOf(target)) + " targets");
  }
  const std::string name =
      interface->netns.empty() ? interface->ifname : interface->netns + "/" + interface->ifname;
  const std::string shown = interface->netns.empty() ? name + " (initial namespace)" : name;
  if (interface->netns.empty() &&
      std::find(management.begin(), management.end(), interface->ifname) != management.end()) {
    return Status(StatusCode::kPermissionDenied,
                  "fault target " + shown +
                      " is this agent's management interface (it carries the controller's "
                      "connection); the agent never injects faults on it");
  }
  if ((allowed.empty() && empty_allows_any) ||
      std::find(allowed.begin(), allowed.end(), name) != allowed.end()) {
    return Status::ok();
  }
  // A fabric-derived list can be long: the first few are enough to show what it looks like.
  constexpr size_t kShown = 8;
  std::vector<std::string> head(
      allowed.begin(),
      allowed.begin() + static_cast<std::ptrdiff_t>(std::min(allowed.size(), kShown)));
  std::string listed = allowed.empty() ? "empty" : joined(head);
  if (allowed.size() > kShown)
    listed += ", ... " + std::to_string(allowed.size() - kShown) + " more";
  return Status(StatusCode::kPermissionDenied, "fault target " + shown +
                                                   " is not on this agent's allowlist (" + listed +
                                                   "); " + std::string(remedy));
}

}  // namespace fabric_chaos::agent
