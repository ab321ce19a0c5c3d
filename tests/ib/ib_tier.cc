#include "tests/ib/ib_tier.h"

#include <filesystem>

namespace fabric_chaos::testing {

std::string missingIbTools(const std::vector<std::string>& tools) {
  std::string missing;
  std::vector<std::string> all = {"ibsim", "opensm"};
  all.insert(all.end(), tools.begin(), tools.end());
  for (const std::string& tool : all) {
    if (runShell("command -v " + tool + " >/dev/null").exit_code != 0) {
      missing += (missing.empty() ? "" : ", ") + tool;
    }
  }
  if (!std::filesystem::exists(kUmad2sim)) {
    missing += (missing.empty() ? "" : ", ") + std::string(kUmad2sim);
  }
  if (missing.empty()) return "";
  return "ibsim tier: missing " + missing +
         " (deploy/install-deps.sh installs ibsim-utils, opensm and infiniband-diags)";
}

CommandOutput attachedTool(const std::string& netns, const std::string& dir,
                           const std::string& node, const std::string& command) {
  return runShell("ip netns exec " + netns + " env -C " + dir + " SIM_HOST=" + node +
                  " LD_PRELOAD=" + kUmad2sim + " " + command + " 2>&1");
}

}  // namespace fabric_chaos::testing
