#include "scenarios/slurm_fabric.h"

#include <algorithm>
#include <cctype>

#include "scenarios/json_fields.h"

namespace fabric_chaos::scenarios {
namespace {

using core::Status;
using json_fields::checkObject;
using json_fields::child;
using json_fields::find;
using json_fields::invalid;
using json_fields::readString;
using nlohmann::json;

// What slurm.conf's NodeName and a hostname accept: letters, digits, '-', '_' and '.'.
bool validNodeName(const std::string& name) {
  return !name.empty() && name.size() <= 255 && std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_' || c == '.';
  });
}

// A name under /run/netns: no '/', not "." or "..".
bool validNetns(const std::string& name) {
  return !name.empty() && name.size() <= 255 && name != "." && name != ".." &&
         name.find('/') == std::string::npos && name.find('\0') == std::string::npos;
}

Status readAbsolutePath(const json& obj, const std::string& path, std::string_view key,
                        std::string& out) {
  FC_RETURN_IF_ERROR(readString(obj, path, key, out));
  if (!out.empty() && out.front() != '/') {
    return invalid(child(path, key), "must be an absolute path, got \"" + out + "\"");
  }
  return Status::ok();
}

}  // namespace

std::string SlurmCluster::nodeOf(const std::string& host) const {
  auto it = nodes.find(host);
  return it == nodes.end() ? host : it->second;
}

core::Result<SlurmCluster> slurmClusterFromJson(const json& doc) {
  const std::string path = "slurm";
  FC_RETURN_IF_ERROR(
      checkObject(doc, path, {"conf", "submit_netns", "partition", "binary", "nodes"}));
  SlurmCluster slurm;
  FC_RETURN_IF_ERROR(readAbsolutePath(doc, path, "conf", slurm.conf));
  FC_RETURN_IF_ERROR(readAbsolutePath(doc, path, "binary", slurm.binary));
  FC_RETURN_IF_ERROR(readString(doc, path, "submit_netns", slurm.submit_netns));
  if (!slurm.submit_netns.empty() && !validNetns(slurm.submit_netns)) {
    return invalid(child(path, "submit_netns"), "is not a network namespace name");
  }
  FC_RETURN_IF_ERROR(readString(doc, path, "partition", slurm.partition));
  if (!slurm.partition.empty() && !validNodeName(slurm.partition)) {
    return invalid(child(path, "partition"), "is not a Slurm partition name");
  }
  if (const json* nodes = find(doc, "nodes")) {
    const std::string nodes_path = child(path, "nodes");
    if (!nodes->is_object()) return invalid(nodes_path, "must map fabric hosts to Slurm nodes");
    for (const auto& [host, node] : nodes->items()) {
      if (!node.is_string() || !validNodeName(node.get<std::string>())) {
        return invalid(child(nodes_path, host),
                       "must be a Slurm node name (letters, digits, '-', '_', '.')");
      }
      slurm.nodes[host] = node.get<std::string>();
    }
  }
  return slurm;
}

json toJson(const SlurmCluster& slurm) {
  json out = json::object();
  if (!slurm.conf.empty()) out["conf"] = slurm.conf;
  if (!slurm.submit_netns.empty()) out["submit_netns"] = slurm.submit_netns;
  if (!slurm.partition.empty()) out["partition"] = slurm.partition;
  if (!slurm.binary.empty()) out["binary"] = slurm.binary;
  if (!slurm.nodes.empty()) out["nodes"] = slurm.nodes;
  return out;
}

}  // namespace fabric_chaos::scenarios
