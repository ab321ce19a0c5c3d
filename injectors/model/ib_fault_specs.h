#pragma once
// The InfiniBand kinds' declarations (injectors/model/kind_spec.h, docs/ib.md):
// - sm_failover: the subnet manager fails (its process killed or stopped, or its port down);
// - ib_link_down / ib_link_flap: an IB port's link goes down, once or count times;
// - ib_mad_loss: a port drops a share of the management datagrams (MADs) through it.

#include <string_view>

#include "injectors/model/kind_spec.h"

namespace fabric_chaos::injectors {

// How sm_failover fails the SM.
enum class SmFailoverMode {
  kKill,      // SIGKILL: a crash; standbys notice only when their polling misses
  kStop,      // SIGTERM: OpenSM's clean exit
  kPortDown,  // the SM's own port goes down: the SM lives, cut off from its subnet
};
std::string_view toString(SmFailoverMode mode);       // "kill", "stop", "port_down"
SmFailoverMode smFailoverModeOf(const json& params);  // params checked by checkParams

const KindSpec& smFailoverSpec();
const KindSpec& ibLinkDownSpec();
const KindSpec& ibLinkFlapSpec();
const KindSpec& ibMadLossSpec();

}  // namespace fabric_chaos::injectors
