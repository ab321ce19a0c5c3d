// `fabric-chaos fabric import`: a description fabric-chaos keeps, made from what an operator has.
// --ibnetdiscover FILE: an InfiniBand subnet from the output of `ibnetdiscover` run on it (a real
// subnet's or the simulated lab's; docs/ib.md): nodes with GUIDs, LIDs and roles, and the cables
// between their ports. --inventory FILE: a real fabric (hosts, NICs, rails, leaves, spines;
// docs/deployment.md) as serve reads it from <state-dir>/fabrics. A summary goes to stderr.

#include <cstdio>
#include <iostream>
#include <map>
#include <sstream>
#include <string>

#include "app/cli.h"
#include "core/file_replace.h"
#include "ib/ibnetdiscover.h"
#include "scenarios/inventory.h"
#include "scenarios/topology.h"

namespace fabric_chaos::app {
namespace {

constexpr const char* kFabricUsage =
    R"(Usage: fabric-chaos fabric import (--ibnetdiscover FILE | --inventory FILE) [--out JSON]

--ibnetdiscover FILE  the output of `ibnetdiscover` on an InfiniBand subnet; prints the subnet
                      as fabric-chaos describes it: {"nodes": [{"type", "guid", "description",
                      "ports", "lid", "role"}], "links": [{"a", "b", "rate"}]}, roles inferred
                      from the cabling (a switch with an HCA behind a port is a leaf, one with
                      switches only a spine). See docs/ib.md.
--inventory FILE      a real fabric's inventory (JSON: hosts with their management address and
                      NICs, each NIC's rail and leaf port, the leaves' uplinks to the spines);
                      prints the fabric serve drives, kind "real", with agents at
                      https://<address>:7100 and the labels selectors match (rail, leaf, spine,
                      role). Write it to <state-dir>/fabrics/NAME.json. See docs/deployment.md.
FILE may be `-` for standard input. --out writes the JSON to a file instead of standard output.
Exit 0, 1 when FILE cannot be read or parsed (the message names the line or field), 2 for bad
usage.
)";

core::Result<std::string> readInput(const std::string& path) {
  if (path != "-") return core::readWholeFile(path);
  std::stringstream in;
  in << std::cin.rdbuf();
  return in.str();
}

// The subnet's JSON and a one-line summary, or the parse error.
core::Result<std::string> importIbnetdiscover(const std::string& text, std::string* summary) {
  auto subnet = ib::parseIbnetdiscover(text);
  if (!subnet.isOk()) return subnet.status();
  std::map<std::string, int> roles;
  for (const ib::IbNode& node : subnet->nodes) ++roles[ib::describe(node.role)];
  std::string by_role;
  for (const auto& [role, count] : roles) {
    by_role += (by_role.empty() ? "" : ", ") + std::to_string(count) + " " + role;
  }
  *summary = std::to_string(subnet->nodes.size()) + " nodes (" + by_role + "), " +
             std::to_string(subnet->links.size()) + " links";
  return ib::toJson(*subnet).dump(2) + "\n";
}

core::Result<std::string> importInventory(const std::string& text, std::string* summary) {
  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    return core::Status(core::StatusCode::kInvalidArgument, "not JSON");
  }
  auto fabric = scenarios::fabricFromInventory(doc);
  if (!fabric.isOk()) return fabric.status();
  size_t leaves = 0;
  for (const auto& sw : fabric->switches) leaves += sw.labels.at("role") == "leaf" ? 1 : 0;
  *summary = "fabric " + fabric->name + ": " + std::to_string(fabric->hosts.size()) + " hosts, " +
             std::to_string(leaves) + " leaves, " +
             std::to_string(fabric->switches.size() - leaves) + " spines, " +
             std::to_string(fabric->links.size()) + " host links, " +
             std::to_string(fabric->switch_links.size()) + " uplinks";
  return scenarios::toJson(*fabric).dump(2) + "\n";
}

}  // namespace

int fabricMain(int argc, char** argv) {
  const Flags flags =
      parseFlags(argc, argv, {{"ibnetdiscover", "inventory", "out"}, {"help"}, true});
  if (flags.has("help") || (flags.error.empty() && flags.positional.empty())) {
    std::fputs(kFabricUsage, flags.has("help") ? stdout : stderr);
    return flags.has("help") ? 0 : 2;
  }
  const bool ib = flags.has("ibnetdiscover");
  if (!flags.error.empty() || flags.positional.size() != 1 || flags.positional[0] != "import" ||
      ib == flags.has("inventory")) {
    std::fprintf(stderr, "fabric-chaos fabric: %s\n\n%s",
                 !flags.error.empty()
                     ? flags.error.c_str()
                     : "say: fabric import --ibnetdiscover FILE, or fabric import --inventory FILE",
                 kFabricUsage);
    return 2;
  }
  const std::string path = *flags.get(ib ? "ibnetdiscover" : "inventory");
  auto text = readInput(path);
  if (!text.isOk()) {
    std::fprintf(stderr, "fabric-chaos fabric import: %s\n", text.status().toString().c_str());
    return 1;
  }
  std::string summary;
  auto json = ib ? importIbnetdiscover(*text, &summary) : importInventory(*text, &summary);
  if (!json.isOk()) {
    std::fprintf(stderr, "fabric-chaos fabric import: %s: %s\n", path.c_str(),
                 json.status().message().c_str());
    return 1;
  }
  std::fprintf(stderr, "fabric-chaos fabric import: %s\n", summary.c_str());
  if (auto out = flags.get("out")) {
    if (core::Status s = core::replaceFileContents(*out, *json); !s.isOk()) {
      std::fprintf(stderr, "fabric-chaos fabric import: %s\n", s.toString().c_str());
      return 1;
    }
    return 0;
  }
  std::fputs(json->c_str(), stdout);
  return 0;
}

}  // namespace fabric_chaos::app
