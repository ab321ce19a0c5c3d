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

// A star lab of `hosts` hosts, its namespaces `prefix`-*, every switch port modelled at
// `rate_bps` with 512 KiB per class and DSCP 26 in the lossless class.
inline lab::LabOptions modelledStar(int hosts, const std::string& prefix, const std::string& name,
                                    const std::string& state_dir, int64_t rate_bps) {
  lab::LabOptions options;
  options.hosts = hosts;
  options.prefix = prefix;
  options.name = name;
  options.state_dir = state_dir;
  options.egress = scenarios::EgressModel{rate_bps, 512 * 1024, {26}};
  return options;
}

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
