#include "core/json_keys.h"

#include <algorithm>

namespace fabric_chaos::core {

std::optional<std::string> firstUnknownKey(const nlohmann::json& obj,
                                           std::initializer_list<std::string_view> allowed) {
  if (!obj.is_object()) return std::nullopt;
  for (const auto& item : obj.items()) {
    const std::string& key = item.key();
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) return key;
  }
  return std::nullopt;
}

}  // namespace fabric_chaos::core
