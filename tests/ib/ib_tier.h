#pragma once
// What the ibsim tier's tests share: the check for its tools (a failure in CI, a skip outside,
// naming the Debian packages), and a Debian tool run attached at a simulated node from a
// directory of the test's own (umad2sim makes ./sys-PID there).

#include <string>
#include <vector>

#include "tests/privileged/support.h"

namespace fabric_chaos::testing {

inline constexpr const char* kUmad2sim = "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so";

// "" when ibsim, opensm, umad2sim and every one of `tools` are here; else what is missing, with
// the packages that bring it.
std::string missingIbTools(const std::vector<std::string>& tools);

// `command` attached at `node` of the simulated subnet in `netns`, from `dir`; stdout and stderr.
CommandOutput attachedTool(const std::string& netns, const std::string& dir,
                           const std::string& node, const std::string& command);

}  // namespace fabric_chaos::testing

// Fails the test in CI, skips it elsewhere, when missingIbTools(...) is not empty.
#define FC_REQUIRE_IB_TOOLS(...)                                                        \
  do {                                                                                  \
    const std::string missing = ::fabric_chaos::testing::missingIbTools({__VA_ARGS__}); \
    if (!missing.empty()) {                                                             \
      const char* ci = std::getenv("CI");                                               \
      if (ci != nullptr && std::string(ci) == "true") FAIL() << missing;                \
      GTEST_SKIP() << missing;                                                          \
    }                                                                                   \
  } while (0)
