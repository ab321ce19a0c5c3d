// `fabric-chaos fabric import --ibnetdiscover FILE`: an InfiniBand subnet's description from the
// output of `ibnetdiscover` run on it (a real subnet's or the simulated lab's), as the JSON
// fabric-chaos keeps (docs/ib.md): nodes with GUIDs, LIDs and roles, and the cables between
// their ports. A summary goes to stderr.

#include <cstdio>
#include <iostream>
#include <map>
#include <sstream>
#include <string>

#include "app/cli.h"
#include "core/file_replace.h"
#include "ib/ibnetdiscover.h"

namespace fabric_chaos::app {
namespace {

constexpr const char* kFabricUsage =
    R"(Usage: fabric-chaos fabric import --ibnetdiscover FILE [--out JSON]

Reads FILE, the output of `ibnetdiscover` on an InfiniBand subnet (`-` for standard input), and
prints the subnet as fabric-chaos describes it: {"nodes": [{"type", "guid", "description",
"ports", "lid", "role"}], "links": [{"a", "b", "rate"}]}, roles inferred from the cabling (a
switch with an HCA behind a port is a leaf, one with switches only a spine). --out writes the
JSON to a file instead of standard output. Exit 0, 1 when FILE cannot be read or parsed (the
message names the line), 2 for bad usage. See docs/ib.md.
)";

}  // namespace

int fabricMain(int argc, char** argv) {
  const Flags flags = parseFlags(argc, argv, {{"ibnetdiscover", "out"}, {"help"}, true});
  if (flags.has("help") || (flags.error.empty() && flags.positional.empty())) {
    std::fputs(kFabricUsage, flags.has("help") ? stdout : stderr);
    return flags.has("help") ? 0 : 2;
  }
  if (!flags.error.empty() || flags.positional.size() != 1 || flags.positional[0] != "import" ||
      !flags.has("ibnetdiscover")) {
    std::fprintf(
        stderr, "fabric-chaos fabric: %s\n\n%s",
        !flags.error.empty() ? flags.error.c_str() : "say: fabric import --ibnetdiscover FILE",
        kFabricUsage);
    return 2;
  }
  const std::string path = *flags.get("ibnetdiscover");
  std::string text;
  if (path == "-") {
    std::stringstream in;
    in << std::cin.rdbuf();
    text = in.str();
  } else {
    auto read = core::readWholeFile(path);
    if (!read.isOk()) {
      std::fprintf(stderr, "fabric-chaos fabric import: %s\n", read.status().toString().c_str());
      return 1;
    }
    text = *read;
  }
  auto subnet = ib::parseIbnetdiscover(text);
  if (!subnet.isOk()) {
    std::fprintf(stderr, "fabric-chaos fabric import: %s: %s\n", path.c_str(),
                 subnet.status().message().c_str());
    return 1;
  }
  std::map<std::string, int> roles;
  for (const ib::IbNode& node : subnet->nodes) ++roles[ib::describe(node.role)];
  std::string summary;
  for (const auto& [role, count] : roles) {
    summary += (summary.empty() ? "" : ", ") + std::to_string(count) + " " + role;
  }
  std::fprintf(stderr, "fabric-chaos fabric import: %zu nodes (%s), %zu links\n",
               subnet->nodes.size(), summary.c_str(), subnet->links.size());
  const std::string json = ib::toJson(*subnet).dump(2) + "\n";
  if (auto out = flags.get("out")) {
    if (core::Status s = core::replaceFileContents(*out, json); !s.isOk()) {
      std::fprintf(stderr, "fabric-chaos fabric import: %s\n", s.toString().c_str());
      return 1;
    }
    return 0;
  }
  std::fputs(json.c_str(), stdout);
  return 0;
}

}  // namespace fabric_chaos::app
