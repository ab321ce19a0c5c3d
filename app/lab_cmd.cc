#include <cstdio>
#include <iostream>

#include "app/cli.h"
#include "injectors/sys/command.h"
#include "lab/netns_lab.h"

namespace fabric_chaos::app {
namespace {

constexpr const char* kLabUsage = R"(Usage: fabric-chaos lab <up|down|status> [options]

  up       build the namespace lab: N hosts (network namespaces) cabled to one bridge switch
  down     remove every namespace, link, qdisc and nft table the lab made
  status   show whether the lab is up

Options:
  --hosts N          number of hosts for `up` (default 4, 2..64)
  --state-dir DIR    where the fabric description is written (default /run/fabric-chaos)
)";

}  // namespace

int labMain(int argc, char** argv) {
  Flags flags = parseFlags(argc, argv, {"help"});
  if (flags.has("help") || flags.positional.empty()) {
    std::fputs(kLabUsage, flags.has("help") ? stdout : stderr);
    return flags.has("help") ? 0 : 2;
  }
  if (!flags.error.empty() || !flags.unknown({"hosts", "state-dir", "help"}).empty()) {
    std::fprintf(stderr, "fabric-chaos lab: %s\n\n%s",
                 flags.error.empty()
                     ? ("unknown option --" + flags.unknown({"hosts", "state-dir"})).c_str()
                     : flags.error.c_str(),
                 kLabUsage);
    return 2;
  }
  lab::LabOptions options;
  options.state_dir = flags.getOr("state-dir", options.state_dir);
  try {
    options.hosts = std::stoi(flags.getOr("hosts", "4"));
  } catch (const std::exception&) {
    std::fprintf(stderr, "fabric-chaos lab: --hosts must be a number\n");
    return 2;
  }
  auto runner = sys::makeCommandRunner();
  lab::NetnsLab lab(*runner, options);
  auto print = [](const std::string& line) { std::cout << line << std::endl; };
  const std::string& action = flags.positional[0];
  if (action == "up") {
    auto fabric = lab.up(print);
    if (!fabric.isOk()) {
      std::fprintf(stderr, "fabric-chaos lab up: %s\n", fabric.status().message().c_str());
      return 1;
    }
    for (const auto& host : fabric->hosts) {
      std::cout << "  " << host.name << "  netns " << host.netns << "  " << host.nics[0].name << " "
                << host.nics[0].address << "  rack " << host.labels.at("rack") << "\n";
    }
    return 0;
  }
  if (action == "down") {
    auto status = lab.down(print);
    if (!status.isOk()) {
      std::fprintf(stderr, "fabric-chaos lab down: %s\n", status.message().c_str());
      return 1;
    }
    return 0;
  }
  if (action == "status") {
    auto status = lab.status();
    if (!status.isOk()) {
      std::fprintf(stderr, "fabric-chaos lab status: %s\n", status.status().message().c_str());
      return 1;
    }
    std::cout << (status->up ? "up" : "down") << " (" << status->present_namespaces.size()
              << " namespaces present";
    if (!status->missing_namespaces.empty() && !status->present_namespaces.empty()) {
      std::cout << ", " << status->missing_namespaces.size() << " missing";
    }
    std::cout << "; fabric file " << status->fabric_file << ")\n";
    return status->up ? 0 : 3;
  }
  std::fprintf(stderr, "fabric-chaos lab: unknown action \"%s\"\n\n%s", action.c_str(), kLabUsage);
  return 2;
}

}  // namespace fabric_chaos::app
