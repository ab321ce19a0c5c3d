#pragma once
// The IB probe's view of the subnet's forwarding: discoverRoutes() walks the subnet once by
// direct route from the local port, as ibnetdiscover does (NodeInfo, NodeDescription and PortInfo
// of every port of every switch), into an ib::RouteMap; a RouteSweep then reads every switch's
// LFT and the state of its cabled ports, a few management datagrams at a time, into one
// ib::RouteReading per pass. The probe gives the sweep the idle part of each period, so reading
// routes never delays its SA rounds. A switch that answers on none of its direct routes is left
// out of that pass's reading (ib/lft_routes.h counts the pairs through it as unknown). Not
// thread-safe.

#include <cstdint>
#include <optional>

#include "core/status.h"
#include "ib/lft_routes.h"
#include "workload/sys/ib_smp.h"

namespace fabric_chaos::workload {

// Up to this many direct routes are kept per switch: the one the discovery reached it by, then the
// shortest that leave the first switch by each of its other switch ports, so that one failed cable
// near the probe does not hide a switch from all of them.
inline constexpr size_t kRoutesPerSwitch = 4;

// kFailedPrecondition when the local port is not cabled to a switch; a query without an answer
// fails the discovery with its message.
core::Result<ib::RouteMap> discoverRoutes(SmpReader& smp, int timeout_ms);

class RouteSweep {
 public:
  RouteSweep(ib::RouteMap map, int timeout_ms);
  const ib::RouteMap& map() const { return map_; }

  // Reads until `deadline_ns` (steady clock) comes closer than the last read took, or the pass
  // ends. A finished pass's reading, and how long it took from its first read; nullopt while one
  // is under way.
  struct Pass {
    ib::RouteReading reading;
    int64_t duration_ns = 0;
  };
  std::optional<Pass> advance(SmpReader& smp, int64_t deadline_ns);
  bool midPass() const { return pass_start_ns_ != 0; }

 private:
  struct Read {
    size_t switch_index = 0;
    int lft_block = -1;  // >= 0: this LFT block; otherwise the PortInfo of `port`
    int port = 0;
  };
  bool readOne(SmpReader& smp, const Read& read, int timeout_ms);

  ib::RouteMap map_;
  int timeout_ms_;
  std::vector<Read> reads_;
  std::vector<size_t> route_choice_;  // per switch: which of its direct routes answered last
  size_t next_ = 0;
  int64_t pass_start_ns_ = 0;
  int64_t last_read_ns_ = 0;
  ib::RouteReading reading_;
  std::vector<bool> unreadable_;  // per switch, in this pass
};

}  // namespace fabric_chaos::workload
