#pragma once
// What the lab benches share: a namespace lab of their own (its prefix and state directory), built
// through the product's NetnsLab with the real adapters, and taken down again.

#include <cstdio>
#include <memory>
#include <string>

#include "injectors/sys/command.h"
#include "injectors/sys/offloads.h"
#include "injectors/sys/sysctl.h"
#include "lab/netns_lab.h"

namespace fabric_chaos::bench {

class BenchLab {
 public:
  explicit BenchLab(lab::LabOptions options)
      : runner_(sys::makeCommandRunner()),
        offloads_(sys::makeEthtoolOffloads()),
        sysctls_(sys::makeProcSysctls()),
        lab_(*runner_, *offloads_, *sysctls_, std::move(options)) {}

  // Brings the lab up; false, with the reason on stderr and nothing left behind, when it cannot.
  bool up() {
    auto up = lab_.up(quiet);
    if (up.isOk()) return true;
    std::fprintf(stderr, "lab up: %s\n", up.status().toString().c_str());
    (void)lab_.down(quiet);
    return false;
  }
  // Takes it down; false, with the reason on stderr, when that fails.
  bool down() {
    const core::Status down = lab_.down(quiet);
    if (!down.isOk()) std::fprintf(stderr, "lab down: %s\n", down.toString().c_str());
    return down.isOk();
  }

 private:
  static void quiet(const std::string&) {}

  std::unique_ptr<sys::CommandRunner> runner_;
  std::unique_ptr<sys::Offloads> offloads_;
  std::unique_ptr<sys::NetnsSysctls> sysctls_;
  lab::NetnsLab lab_;
};

}  // namespace fabric_chaos::bench
