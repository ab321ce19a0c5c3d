#include "injectors/sys/qdisc.h"

#include <linux/if.h>
#include <linux/pkt_sched.h>
#include <netlink/netlink.h>
#include <netlink/route/link.h>
#include <netlink/route/qdisc.h>
#include <netlink/route/qdisc/netem.h>
#include <netlink/route/qdisc/tbf.h>
#include <netlink/route/tc.h>

#include <climits>
#include <cmath>

#include "injectors/sys/netlink_status.h"
#include "injectors/sys/netns.h"

namespace fabric_chaos::sys {

uint32_t netemProbability(double percent) {
  if (!(percent > 0)) return 0;  // also NaN
  if (percent >= 100) return UINT32_MAX;
  return static_cast<uint32_t>(std::llround(percent / 100.0 * static_cast<double>(UINT32_MAX)));
}

namespace {

struct QdiscDeleter {
  void operator()(rtnl_qdisc* qdisc) const { rtnl_qdisc_put(qdisc); }
};
using QdiscPtr = std::unique_ptr<rtnl_qdisc, QdiscDeleter>;

struct CacheDeleter {
  void operator()(nl_cache* cache) const { nl_cache_free(cache); }
};
using CachePtr = std::unique_ptr<nl_cache, CacheDeleter>;

bool isValidKind(const std::string& kind) {
  if (kind.empty() || kind.size() >= 16) return false;
  for (char c : kind) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

core::Status notInKernel(int nle, const std::string& kind) {
  return core::Status(core::StatusCode::kNotSupported, "sch_" + kind + " is not in this kernel",
                      std::abs(nle));
}

// A root qdisc request for ifindex; the kind is set by the caller.
core::Result<QdiscPtr> newRootQdisc(int ifindex, const std::string& kind) {
  QdiscPtr qdisc(rtnl_qdisc_alloc());
  if (!qdisc) return core::Status(core::StatusCode::kInternal, "cannot allocate a qdisc");
  rtnl_tc_set_ifindex(TC_CAST(qdisc.get()), ifindex);
  rtnl_tc_set_parent(TC_CAST(qdisc.get()), TC_H_ROOT);
  if (!kind.empty()) {
    int err = rtnl_tc_set_kind(TC_CAST(qdisc.get()), kind.c_str());
    if (err < 0) return nlStatus(err, "cannot set qdisc kind " + kind);
  }
  return qdisc;
}

class NetlinkQdiscs : public Qdiscs {
 public:
  core::Result<std::optional<QdiscInfo>> getRoot(const std::string& netns,
                                                 const std::string& ifname) override {
    if (!isValidIfname(ifname)) return invalidIfname(ifname);
    std::optional<QdiscInfo> info;
    core::Status status = runInNetns(netns, [&]() -> core::Status {
      auto sock = connectRoute();
      if (!sock.isOk()) return sock.status();
      auto ifindex = ifindexOf(sock->get(), netns, ifname);
      if (!ifindex.isOk()) return ifindex.status();
      nl_cache* raw = nullptr;
      int err = rtnl_qdisc_alloc_cache(sock->get(), &raw);
      if (err < 0) return nlStatus(err, "cannot list qdiscs");
      CachePtr cache(raw);
      QdiscPtr root(rtnl_qdisc_get_by_parent(cache.get(), *ifindex, TC_H_ROOT));
      if (!root) return core::Status::ok();
      rtnl_tc* tc = TC_CAST(root.get());
      QdiscInfo found;
      const char* kind = rtnl_tc_get_kind(tc);
      found.kind = kind ? kind : "";
      found.packets = rtnl_tc_get_stat(tc, RTNL_TC_PACKETS);
      found.drops = rtnl_tc_get_stat(tc, RTNL_TC_DROPS);
      info = found;
      return core::Status::ok();
    });
    if (!status.isOk()) return status;
    return info;
  }

  core::Status replaceRootNetem(const std::string& netns, const std::string& ifname,
                                const NetemSpec& spec) override {
    if (!isValidIfname(ifname)) return invalidIfname(ifname);
    FC_RETURN_IF_ERROR(validateSpec(spec));
    return runInNetns(netns, [&]() -> core::Status {
      auto sock = connectRoute();
      if (!sock.isOk()) return sock.status();
      auto ifindex = ifindexOf(sock->get(), netns, ifname);
      if (!ifindex.isOk()) return ifindex.status();
      auto qdisc = newRootQdisc(*ifindex, "netem");
      if (!qdisc.isOk()) return qdisc.status();
      rtnl_qdisc* q = qdisc->get();
      // The probability setters take the kernel's raw u32 scale through an int parameter.
      uint32_t loss = netemProbability(spec.loss_percent);
      rtnl_netem_set_loss(q, static_cast<int>(loss));
      // libnl refuses a loss correlation without a loss probability (NLE_MISSING_ATTR).
      if (loss != 0 && spec.loss_correlation > 0) {
        rtnl_netem_set_loss_correlation(q,
                                        static_cast<int>(netemProbability(spec.loss_correlation)));
      }
      if (spec.delay_us > 0) rtnl_netem_set_delay(q, static_cast<int>(spec.delay_us));
      if (spec.jitter_us > 0) rtnl_netem_set_jitter(q, static_cast<int>(spec.jitter_us));
      int err = rtnl_qdisc_add(sock->get(), q, NLM_F_CREATE | NLM_F_REPLACE);
      if (err < 0) {
        // The device was just resolved, so "not found" here means the kernel has no sch_netem.
        if (std::abs(err) == NLE_OBJ_NOTFOUND) return notInKernel(err, "netem");
        return nlStatus(err, "cannot attach netem to " + ifname);
      }
      return core::Status::ok();
    });
  }

  core::Status deleteRoot(const std::string& netns, const std::string& ifname) override {
    if (!isValidIfname(ifname)) return invalidIfname(ifname);
    return runInNetns(netns, [&]() -> core::Status {
      auto sock = connectRoute();
      if (!sock.isOk()) return sock.status();
      auto ifindex = ifindexOf(sock->get(), netns, ifname);
      if (!ifindex.isOk()) return ifindex.status();
      auto qdisc = newRootQdisc(*ifindex, "");
      if (!qdisc.isOk()) return qdisc.status();
      int err = rtnl_qdisc_delete(sock->get(), qdisc->get());
      // ENOENT: no root qdisc, or only the kernel's default (handle 0), which cannot be
      // deleted and is exactly the state we want.
      if (err < 0 && std::abs(err) != NLE_OBJ_NOTFOUND) {
        return nlStatus(err, "cannot delete the root qdisc of " + ifname);
      }
      return core::Status::ok();
    });
  }

  core::Status probeKind(const std::string& kind) override {
    if (!isValidKind(kind)) {
      return core::Status(core::StatusCode::kInvalidArgument, "invalid qdisc kind '" + kind + "'");
    }
    return runInScratchNetns([&]() -> core::Status {
      auto sock = connectRoute();
      if (!sock.isOk()) return sock.status();
      auto ifindex = ifindexOf(sock->get(), "", "lo");
      if (!ifindex.isOk()) return ifindex.status();
      FC_RETURN_IF_ERROR(setLoUp(sock->get()));
      auto qdisc = newRootQdisc(*ifindex, kind);
      if (!qdisc.isOk()) return qdisc.status();
      // Kinds whose kernel init rejects an empty option block get the smallest valid one, so
      // that EINVAL below really means "the kernel does not understand this kind".
      if (kind == "tbf") {
        rtnl_qdisc_tbf_set_limit(qdisc->get(), 10000);
        rtnl_qdisc_tbf_set_rate(qdisc->get(), 125000, 10000, 0);
      }
      int err = rtnl_qdisc_add(sock->get(), qdisc->get(), NLM_F_CREATE | NLM_F_EXCL);
      if (err < 0) {
        int nle = std::abs(err);
        if (nle == NLE_OBJ_NOTFOUND || nle == NLE_INVAL) return notInKernel(err, kind);
        return nlStatus(err, "cannot probe qdisc kind " + kind);
      }
      return core::Status::ok();
    });
  }

 private:
  static core::Status invalidIfname(const std::string& ifname) {
    return core::Status(core::StatusCode::kInvalidArgument,
                        "invalid interface name '" + ifname + "'");
  }

  static core::Status validateSpec(const NetemSpec& spec) {
    auto percentOk = [](double v) { return v >= 0 && v <= 100; };
    if (!percentOk(spec.loss_percent)) {
      return core::Status(core::StatusCode::kInvalidArgument, "netem loss must be in 0..100%");
    }
    if (!percentOk(spec.loss_correlation)) {
      return core::Status(core::StatusCode::kInvalidArgument,
                          "netem loss correlation must be in 0..100%");
    }
    if (spec.delay_us < 0 || spec.delay_us > INT_MAX || spec.jitter_us < 0 ||
        spec.jitter_us > INT_MAX) {
      return core::Status(
          core::StatusCode::kInvalidArgument,
          "netem delay and jitter must be in 0.." + std::to_string(INT_MAX) + " us");
    }
    return core::Status::ok();
  }

  static core::Status setLoUp(nl_sock* sock) {
    rtnl_link* orig = nullptr;
    int err = rtnl_link_get_kernel(sock, 0, "lo", &orig);
    if (err < 0) return nlStatus(err, "cannot read lo");
    rtnl_link* change = rtnl_link_alloc();
    if (change == nullptr) {
      rtnl_link_put(orig);
      return core::Status(core::StatusCode::kInternal, "cannot allocate a link change");
    }
    rtnl_link_set_flags(change, IFF_UP);
    err = rtnl_link_change(sock, orig, change, 0);
    rtnl_link_put(change);
    rtnl_link_put(orig);
    if (err < 0) return nlStatus(err, "cannot set lo up");
    return core::Status::ok();
  }
};

}  // namespace

std::unique_ptr<Qdiscs> makeNetlinkQdiscs() { return std::make_unique<NetlinkQdiscs>(); }

}  // namespace fabric_chaos::sys
