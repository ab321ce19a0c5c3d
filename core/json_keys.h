#pragma once
// Strict JSON decoding: every decoder that refuses unknown fields (a typo such as "parms" must not
// be dropped silently) asks the same question. Pure; safe from any thread.

#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace fabric_chaos::core {

// The first key of `obj` that is not in `allowed`, or nullopt when there is none (or `obj` is not
// an object). Callers word the error, since each names the field by its own path.
std::optional<std::string> firstUnknownKey(const nlohmann::json& obj,
                                           std::initializer_list<std::string_view> allowed);

}  // namespace fabric_chaos::core
