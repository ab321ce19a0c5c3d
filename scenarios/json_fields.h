#pragma once
// Field readers shared by the scenario and fabric JSON parsers (internal to scenarios/). Each
// failure is "<path>: <what>", so a user sees which field ("steps[1].kind",
// "hosts[0].nics[2].name") to fix: kInvalidArgument (400) for a wrong shape (unknown or missing
// field, wrong JSON type), kUnprocessable (422) for a well-typed value out of its range. Pure;
// safe from any thread.

#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/status.h"

namespace fabric_chaos::scenarios::json_fields {

core::Status invalid(const std::string& path, const std::string& what);
// Well-formed but not acceptable: out of range, not among the choices, in conflict with another
// field (422).
core::Status unacceptable(const std::string& path, const std::string& what);

// The path of field `key` below `path` ("" is the document itself) and of array element `index`.
std::string child(const std::string& path, std::string_view key);
std::string element(const std::string& path, size_t index);

// The field `key` of object `obj`, or nullptr when absent.
const nlohmann::json* find(const nlohmann::json& obj, std::string_view key);

// `obj` must be an object whose keys are all in `allowed`; the first unknown key is named.
core::Status checkObject(const nlohmann::json& obj, const std::string& path,
                         std::initializer_list<std::string_view> allowed);
// The same for a whole document, which messages call `root` ("scenario", "fabric").
core::Status checkRoot(const nlohmann::json& doc, std::string_view root,
                       std::initializer_list<std::string_view> allowed);

// An optional string field; `out` keeps its default when the field is absent.
core::Status readString(const nlohmann::json& obj, const std::string& path, std::string_view key,
                        std::string& out);
// `value` (found at `path`) must be a non-empty string.
core::Status readNonEmptyString(const nlohmann::json& value, const std::string& path,
                                std::string& out);
// A field that must be present and a non-empty string (names, ids, kinds).
core::Status readRequiredString(const nlohmann::json& obj, const std::string& path,
                                std::string_view key, std::string& out);

}  // namespace fabric_chaos::scenarios::json_fields
