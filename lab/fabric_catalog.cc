#include "lab/fabric_catalog.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace fabric_chaos::lab {

std::vector<scenarios::Fabric> DirectoryFabricCatalog::list() {
  std::vector<scenarios::Fabric> fabrics;
  std::error_code ec;
  const std::filesystem::path dir = state_dir_ + "/fabrics";
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.path().extension() != ".json") continue;
    std::ifstream in(entry.path());
    auto doc = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (doc.is_discarded()) continue;
    auto fabric = scenarios::fabricFromJson(doc);
    if (fabric.isOk()) fabrics.push_back(std::move(fabric.value()));
  }
  std::sort(fabrics.begin(), fabrics.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  return fabrics;
}

core::Result<scenarios::Fabric> DirectoryFabricCatalog::get(const std::string& name) {
  for (auto& fabric : list()) {
    if (fabric.name == name) return fabric;
  }
  return core::Status(core::StatusCode::kNotFound,
                      "fabric " + name + " is not registered; run `fabric-chaos lab up` first");
}

}  // namespace fabric_chaos::lab
