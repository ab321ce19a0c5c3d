#pragma once
// Fabrics known to `serve`: every <state_dir>/fabrics/*.json, read on each call so that a lab
// brought up or down by another process is seen at once. Thread-safe (no state).

#include <string>

#include "scenarios/services.h"

namespace fabric_chaos::lab {

class DirectoryFabricCatalog : public scenarios::FabricCatalog {
 public:
  explicit DirectoryFabricCatalog(std::string state_dir) : state_dir_(std::move(state_dir)) {}
  std::vector<scenarios::Fabric> list() override;
  core::Result<scenarios::Fabric> get(const std::string& name) override;

 private:
  std::string state_dir_;
};

}  // namespace fabric_chaos::lab
