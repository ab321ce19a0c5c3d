#include "app/fabric_registrar.h"

#include <filesystem>

#include "core/log.h"
#include "lab/lab_common.h"

namespace fabric_chaos::app {

core::Result<nlohmann::json> FabricRegistrar::record(
    const scenarios::AgentRegistration& registration) {
  std::lock_guard lock(mu_);
  const std::string path = lab::fabricFilePath(state_dir_, registration.fabric);
  std::optional<scenarios::Fabric> existing;
  if (auto found = catalog_.get(registration.fabric); found.isOk()) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) {
      return core::Status(core::StatusCode::kFailedPrecondition,
                          "fabric " + registration.fabric + " is not described by " + path +
                              ", so a registration cannot update it");
    }
    existing = std::move(found.value());
  } else if (found.status().code() != core::StatusCode::kNotFound) {
    return found.status();
  }
  const bool created = !existing || existing->findHost(registration.host) == nullptr;
  auto fabric = scenarios::applyRegistration(std::move(existing), registration, agent_token_file_);
  if (!fabric.isOk()) return fabric.status();
  if (core::Status s = lab::writeFabricFile(state_dir_, registration.fabric, *fabric); !s.isOk()) {
    return s;
  }
  if (created) {
    core::logInfo("agent " + registration.host + " registered into fabric " + registration.fabric +
                  " at " + registration.agent_url);
  }
  return nlohmann::json{{"fabric", registration.fabric},
                        {"host", registration.host},
                        {"created", created},
                        {"hosts", fabric->hosts.size()}};
}

}  // namespace fabric_chaos::app
