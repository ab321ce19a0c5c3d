#include "scenarios/json_fields.h"

#include "core/json_keys.h"

namespace fabric_chaos::scenarios::json_fields {

using core::Status;
using core::StatusCode;
using nlohmann::json;

Status invalid(const std::string& path, const std::string& what) {
  return Status(StatusCode::kInvalidArgument, path + ": " + what);
}

Status unacceptable(const std::string& path, const std::string& what) {
  return Status(StatusCode::kUnprocessable, path + ": " + what);
}

std::string child(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}

std::string element(const std::string& path, size_t index) {
  return path + "[" + std::to_string(index) + "]";
}

const json* find(const json& obj, std::string_view key) {
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

Status checkObject(const json& obj, const std::string& path,
                   std::initializer_list<std::string_view> allowed) {
  if (!obj.is_object()) return invalid(path, "must be a JSON object");
  if (auto key = core::firstUnknownKey(obj, allowed))
    return invalid(child(path, *key), "unknown field");
  return Status::ok();
}

Status checkRoot(const json& doc, std::string_view root,
                 std::initializer_list<std::string_view> allowed) {
  if (!doc.is_object()) return invalid(std::string(root), "must be a JSON object");
  return checkObject(doc, "", allowed);
}

Status readString(const json& obj, const std::string& path, std::string_view key,
                  std::string& out) {
  const json* value = find(obj, key);
  if (value == nullptr) return Status::ok();
  if (!value->is_string()) return invalid(child(path, key), "must be a string");
  out = value->get<std::string>();
  return Status::ok();
}

Status readNonEmptyString(const json& value, const std::string& path, std::string& out) {
  if (!value.is_string() || value.get_ref<const std::string&>().empty()) {
    return invalid(path, "must be a non-empty string");
  }
  out = value.get<std::string>();
  return Status::ok();
}

Status readRequiredString(const json& obj, const std::string& path, std::string_view key,
                          std::string& out) {
  const json* value = find(obj, key);
  if (value == nullptr) return invalid(child(path, key), "required");
  return readNonEmptyString(*value, child(path, key), out);
}

}  // namespace fabric_chaos::scenarios::json_fields
