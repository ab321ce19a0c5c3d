#include "injectors/sys/qdisc_stats.h"

#include <linux/pkt_sched.h>
#include <netlink/netlink.h>
#include <netlink/route/link.h>
#include <netlink/route/qdisc.h>
#include <netlink/route/tc.h>

#include <cstdio>
#include <map>
#include <memory>

#include "injectors/sys/netlink_status.h"
#include "injectors/sys/route_socket_pool.h"

namespace fabric_chaos::sys {
namespace {

struct CacheDeleter {
  void operator()(nl_cache* cache) const { nl_cache_free(cache); }
};
using CachePtr = std::unique_ptr<nl_cache, CacheDeleter>;

}  // namespace

std::string formatHandle(uint32_t handle) {
  if (handle == TC_H_ROOT) return "root";
  char buf[32];
  const uint32_t major = TC_H_MAJ(handle) >> 16;
  const uint32_t minor = TC_H_MIN(handle);
  if (minor == 0) {
    std::snprintf(buf, sizeof(buf), "%x:", major);
  } else {
    std::snprintf(buf, sizeof(buf), "%x:%x", major, minor);
  }
  return buf;
}

core::Result<std::vector<QdiscCounters>> readQdiscCounters(const std::string& netns) {
  std::vector<QdiscCounters> out;
  core::Status status = RouteSocketPool::shared().with(netns, [&](nl_sock* sock) -> core::Status {
    const std::string where = netns.empty() ? "" : " of netns " + netns;
    nl_cache* raw_links = nullptr;
    if (int err = rtnl_link_alloc_cache(sock, AF_UNSPEC, &raw_links); err < 0) {
      return nlStatus(err, "cannot list the links" + where);
    }
    CachePtr links(raw_links);
    std::map<int, std::string> names;
    for (nl_object* obj = nl_cache_get_first(links.get()); obj != nullptr;
         obj = nl_cache_get_next(obj)) {
      auto* link = reinterpret_cast<rtnl_link*>(obj);
      const char* name = rtnl_link_get_name(link);
      names[rtnl_link_get_ifindex(link)] = name == nullptr ? "" : name;
    }
    nl_cache* raw_qdiscs = nullptr;
    if (int err = rtnl_qdisc_alloc_cache(sock, &raw_qdiscs); err < 0) {
      return nlStatus(err, "cannot list the qdiscs" + where);
    }
    CachePtr qdiscs(raw_qdiscs);
    for (nl_object* obj = nl_cache_get_first(qdiscs.get()); obj != nullptr;
         obj = nl_cache_get_next(obj)) {
      rtnl_tc* tc = TC_CAST(obj);
      QdiscCounters q;
      q.ifname = names[rtnl_tc_get_ifindex(tc)];
      q.handle = rtnl_tc_get_handle(tc);
      q.parent = rtnl_tc_get_parent(tc);
      const char* kind = rtnl_tc_get_kind(tc);
      q.kind = kind == nullptr ? "" : kind;
      q.bytes = rtnl_tc_get_stat(tc, RTNL_TC_BYTES);
      q.packets = rtnl_tc_get_stat(tc, RTNL_TC_PACKETS);
      q.drops = rtnl_tc_get_stat(tc, RTNL_TC_DROPS);
      q.overlimits = rtnl_tc_get_stat(tc, RTNL_TC_OVERLIMITS);
      q.backlog_bytes = rtnl_tc_get_stat(tc, RTNL_TC_BACKLOG);
      q.qlen = rtnl_tc_get_stat(tc, RTNL_TC_QLEN);
      out.push_back(std::move(q));
    }
    return core::Status::ok();
  });
  if (!status.isOk()) return status;
  return out;
}

}  // namespace fabric_chaos::sys
