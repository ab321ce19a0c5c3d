#pragma once
// Private to injectors/sys: traffic-control requests as raw rtnetlink messages built with libnl-3's
// nl_msg API, for what libnl-route's objects cannot say (netem's Gilbert-Elliott model, rate,
// ns delays) or would re-encode instead of passing through (a captured qdisc's TCA_OPTIONS). All
// calls act in the calling thread's network namespace; errors carry the kernel's extack message.

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "injectors/sys/qdisc.h"

struct nl_sock;

namespace fabric_chaos::sys::raw {

// One RTM_NEWQDISC / RTM_NEWTCLASS / RTM_NEWTFILTER object of a dump.
struct TcObject {
  int ifindex = 0;
  uint32_t handle = 0;
  uint32_t parent = 0;
  std::string kind;                      // TCA_KIND
  std::vector<RawAttribute> attributes;  // every other top-level attribute, in dump order
};

enum class TcDump { kQdiscs, kClasses, kFilters };

// Dumps qdiscs (all interfaces; filter by ifindex yourself), or the classes / filters of one
// interface under `parent` (filters: the block of qdisc TC_H_MAJ(parent)).
core::Result<std::vector<TcObject>> dumpTc(nl_sock* sock, TcDump what, int ifindex,
                                           uint32_t parent);

// RTM_NEWQDISC with TCA_KIND = kind followed by attributes, waiting for the kernel's ack.
core::Status newQdisc(nl_sock* sock, int ifindex, uint32_t parent, uint32_t handle,
                      const std::string& kind, const std::vector<RawAttribute>& attributes,
                      int flags);

// Helpers over a dumped object.
const RawAttribute* findAttribute(const TcObject& object, uint16_t type);
// Counters from TCA_STATS2 (or the legacy TCA_STATS) and the TCA_OPTIONS payload.
QdiscInfo qdiscInfoOf(const TcObject& object);

}  // namespace fabric_chaos::sys::raw
