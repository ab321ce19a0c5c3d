#pragma once
// The switch side of a leaf-spine fabric (lab/leaf_spine.h), built, routed and checked the same way
// for both labs: the namespace lab, whose hosts are namespaces cabled to the leaves by veth, and
// the VM lab, whose hosts are qemu guests whose taps become the leaves' host ports. It runs what
// leafSpineBuild plans, starts BGP (lab/leaf_spine_routing.h) on every switch and waits until
// every leaf reaches every other through every spine. Not thread-safe: one caller at a time.

#include <functional>
#include <string>

#include "core/status.h"
#include "injectors/sys/command.h"
#include "injectors/sys/sysctl.h"
#include "lab/lab_common.h"
#include "lab/leaf_spine.h"

namespace fabric_chaos::lab {

class LeafSpineSwitches {
 public:
  using Progress = std::function<void(const std::string& line)>;

  // routing_dir holds the BGP daemons' configurations, sockets, pid files and logs; rules map
  // `ip`'s failures as the lab's own commands do.
  LeafSpineSwitches(sys::CommandRunner& runner, sys::NetnsSysctls& sysctls, std::string prefix,
                    LeafSpineShape shape, std::string routing_dir, IpErrorRules rules);

  // Creates the namespaces of `plan` (leafSpineBuild's), sets its sysctls, runs its `ip` commands,
  // then starts BGP and waits for it to converge (30 s at most, then kUnavailable naming the
  // missing routes). The caller removes what a failure leaves behind.
  core::Status build(const LeafSpineBuild& plan, const Progress& progress);

  // The flow-hash reset (injectors/sys/flow_hash_reset.h) on every leaf host port that lacks it;
  // the ports must exist. Packets enter the fabric there, so the leaves hash each flow's
  // five-tuple whatever hash its sender's socket gave it.
  core::Status ensureFiveTupleHashing(const Progress& progress);

  // "" when every switch namespace runs its daemon and every leaf has every path; otherwise what
  // is wrong ("no BGP daemon in fcl-s1", "fcl-l0 -> 10.210.1.0/24").
  std::string routingProblem();

  const std::string& routingDir() const { return routing_dir_; }

 private:
  core::Status startRouting(const Progress& progress);
  core::Status waitForConvergence(const Progress& progress);
  // The leaf routes BGP has not installed yet ("fcl-l0 -> 10.210.1.0/24, ..."); "" when every
  // leaf reaches every other through every spine.
  std::string missingRoutes();

  sys::CommandRunner& runner_;
  sys::NetnsSysctls& sysctls_;
  std::string prefix_;
  LeafSpineShape shape_;
  std::string routing_dir_;
  IpErrorRules rules_;
};

}  // namespace fabric_chaos::lab
