#include "injectors/sys/ecn_marker.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>
#include <net/if.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include "core/unique_fd.h"
#include "injectors/sys/ecn_marker_abi.h"
#include "injectors/sys/netns.h"

// The compiled lab/bpf/ecn_marker.bpf.c (cmake/BpfObject.cmake generates the definitions).
extern const unsigned char fc_ecn_marker_bpf_object[];
extern const std::size_t fc_ecn_marker_bpf_object_size;

namespace fabric_chaos::sys {
namespace {

using core::Status;
using core::StatusCode;

static_assert(kEcnProbabilityOne == FC_ECN_PROB_ONE);
static_assert(sizeof(fc_ecn_params) == 6 * sizeof(uint64_t));

// Our filter on the egress hook; `tc filter show dev IF egress` lists it as "pref 1 ... handle 0x1
// fc_ecn_marker ... direct-action".
constexpr uint32_t kFilterHandle = 1;
constexpr uint32_t kFilterPriority = 1;

struct ObjectCloser {
  void operator()(bpf_object* object) const { bpf_object__close(object); }
};
using ObjectPtr = std::unique_ptr<bpf_object, ObjectCloser>;

// libbpf returns -errno.
int errorOf(int ret) { return ret < 0 ? -ret : (errno != 0 ? errno : EINVAL); }

// The last non-empty line of a verifier log: the reason it refused.
std::string lastLine(const std::vector<char>& log) {
  std::string text(log.data(), strnlen(log.data(), log.size()));
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  const size_t newline = text.rfind('\n');
  return newline == std::string::npos ? text : text.substr(newline + 1);
}

Status permissionOr(int err, const std::string& what, StatusCode otherwise,
                    const std::string& message) {
  if (err == EPERM || err == EACCES) {
    return Status(StatusCode::kPermissionDenied,
                  what + ": permission denied (BPF and tc need root: CAP_BPF and CAP_NET_ADMIN)",
                  err);
  }
  return Status(otherwise, what + ": " + message, err);
}

core::Result<int> ifindexOf(const std::string& netns, const std::string& ifname) {
  const unsigned int ifindex = ::if_nametoindex(ifname.c_str());
  if (ifindex == 0) {
    const int err = errno;
    return Status(StatusCode::kNotFound,
                  "no interface " + ifname +
                      (netns.empty() ? std::string() : " in network namespace " + netns),
                  err);
  }
  return static_cast<int>(ifindex);
}

bpf_tc_hook egressHook(int ifindex) {
  bpf_tc_hook hook{};
  hook.sz = sizeof(hook);
  hook.ifindex = ifindex;
  hook.attach_point = BPF_TC_EGRESS;
  return hook;
}

bpf_tc_opts ourFilter() {
  bpf_tc_opts opts{};
  opts.sz = sizeof(opts);
  opts.handle = kFilterHandle;
  opts.priority = kFilterPriority;
  return opts;
}

// Opens the embedded object, gives it `config` and loads it into the kernel.
core::Result<ObjectPtr> loadMarker(const EcnMarkerConfig& config, const std::string& where) {
  std::vector<char> log(64 * 1024, '\0');
  bpf_object_open_opts open_opts{};
  open_opts.sz = sizeof(open_opts);
  open_opts.object_name = "fc_ecn_marker";
  open_opts.kernel_log_buf = log.data();
  open_opts.kernel_log_size = log.size();
  ObjectPtr object(
      bpf_object__open_mem(fc_ecn_marker_bpf_object, fc_ecn_marker_bpf_object_size, &open_opts));
  if (!object) {
    const int err = errno;
    return Status(
        StatusCode::kInternal,
        "libbpf cannot open the embedded ECN marker object: " + std::string(strerror(err)), err);
  }
  bpf_map* rodata = bpf_object__find_map_by_name(object.get(), ".rodata");
  if (rodata == nullptr) {
    return Status(StatusCode::kInternal, "the embedded ECN marker object has no .rodata");
  }
  const fc_ecn_params params = {static_cast<fc_u64>(config.rate_bps / 8),
                                static_cast<fc_u64>(config.buffer_bytes),
                                static_cast<fc_u64>(config.kmin_bytes),
                                static_cast<fc_u64>(config.kmax_bytes),
                                config.pmax,
                                config.lossless_dscp_mask};
  if (int ret = bpf_map__set_initial_value(rodata, &params, sizeof(params)); ret != 0) {
    return Status(StatusCode::kInternal,
                  "the embedded ECN marker's parameters do not match this loader (.rodata size)",
                  errorOf(ret));
  }
  if (int ret = bpf_object__load(object.get()); ret != 0) {
    const int err = errorOf(ret);
    const std::string what = "loading the ECN marker for " + where;
    const std::string verifier = lastLine(log);
    if (err == ENOSYS) {
      return Status(StatusCode::kNotSupported, what + ": this kernel has no bpf() system call",
                    err);
    }
    return permissionOr(err, what, StatusCode::kNotSupported,
                        "the kernel refused it (" + std::string(strerror(err)) + ")" +
                            (verifier.empty() ? std::string("; a kernel without BTF support "
                                                            "cannot hold its bpf_spin_lock map")
                                              : "; verifier: " + verifier));
  }
  return object;
}

}  // namespace

Status attachEcnMarker(const std::string& netns, const std::string& ifname,
                       const EcnMarkerConfig& config) {
  const std::string where = (netns.empty() ? "" : netns + ":") + ifname;
  if (config.rate_bps <= 0 || config.buffer_bytes <= 0 || config.kmin_bytes < 0 ||
      config.kmax_bytes < config.kmin_bytes || config.pmax > kEcnProbabilityOne) {
    return Status(StatusCode::kInvalidArgument, "invalid ECN marker configuration for " + where);
  }
  return runInNetns(netns, [&]() -> Status {
    auto ifindex = ifindexOf(netns, ifname);
    if (!ifindex.isOk()) return ifindex.status();
    auto object = loadMarker(config, where);
    if (!object.isOk()) return object.status();
    bpf_program* program = bpf_object__find_program_by_name(object->get(), FC_ECN_PROG_NAME);
    if (program == nullptr) {
      return Status(StatusCode::kInternal, "the embedded ECN marker has no " FC_ECN_PROG_NAME);
    }
    bpf_tc_hook hook = egressHook(*ifindex);
    if (int ret = bpf_tc_hook_create(&hook); ret != 0 && ret != -EEXIST) {
      return permissionOr(errorOf(ret), "adding a clsact qdisc to " + where,
                          StatusCode::kNotSupported,
                          std::string(strerror(errorOf(ret))) + " (is cls_bpf/clsact built?)");
    }
    bpf_tc_opts opts = ourFilter();
    opts.prog_fd = bpf_program__fd(program);
    opts.flags = BPF_TC_F_REPLACE;
    if (int ret = bpf_tc_attach(&hook, &opts); ret != 0) {
      return permissionOr(errorOf(ret), "attaching the ECN marker to " + where + "'s egress",
                          StatusCode::kNotSupported, strerror(errorOf(ret)));
    }
    // The filter now holds the program and the program its maps; the object can go.
    return Status::ok();
  });
}

Status detachEcnMarker(const std::string& netns, const std::string& ifname) {
  const std::string where = (netns.empty() ? "" : netns + ":") + ifname;
  return runInNetns(netns, [&]() -> Status {
    auto ifindex = ifindexOf(netns, ifname);
    if (!ifindex.isOk()) return ifindex.status();
    bpf_tc_hook hook = egressHook(*ifindex);
    // Both points: libbpf deletes the clsact qdisc itself, and every filter on it.
    hook.attach_point = static_cast<bpf_tc_attach_point>(BPF_TC_INGRESS | BPF_TC_EGRESS);
    const int ret = bpf_tc_hook_destroy(&hook);
    if (ret == 0 || ret == -ENOENT || ret == -EINVAL) return Status::ok();  // none there
    return permissionOr(errorOf(ret), "removing the clsact qdisc of " + where,
                        StatusCode::kInternal, strerror(errorOf(ret)));
  });
}

core::Result<EcnMarks> readEcnMarks(const std::string& netns, const std::string& ifname) {
  const std::string where = (netns.empty() ? "" : netns + ":") + ifname;
  EcnMarks marks;
  Status status = runInNetns(netns, [&]() -> Status {
    auto ifindex = ifindexOf(netns, ifname);
    if (!ifindex.isOk()) return ifindex.status();
    bpf_tc_hook hook = egressHook(*ifindex);
    bpf_tc_opts opts = ourFilter();
    if (int ret = bpf_tc_query(&hook, &opts); ret != 0) {
      if (ret == -ENOENT || ret == -EINVAL) {
        return Status(StatusCode::kNotFound, "no ECN marker on " + where, errorOf(ret));
      }
      return permissionOr(errorOf(ret), "querying " + where + "'s egress filters",
                          StatusCode::kInternal, strerror(errorOf(ret)));
    }
    core::UniqueFd program(bpf_prog_get_fd_by_id(opts.prog_id));
    if (program.get() < 0) {
      return permissionOr(errno, "opening program " + std::to_string(opts.prog_id),
                          StatusCode::kNotFound, strerror(errno));
    }
    uint32_t map_ids[8] = {};
    bpf_prog_info info{};
    info.nr_map_ids = sizeof(map_ids) / sizeof(map_ids[0]);
    info.map_ids = reinterpret_cast<uint64_t>(map_ids);
    uint32_t info_size = sizeof(info);
    if (int ret = bpf_obj_get_info_by_fd(program.get(), &info, &info_size); ret != 0) {
      return permissionOr(errorOf(ret), "reading program " + std::to_string(opts.prog_id),
                          StatusCode::kInternal, strerror(errorOf(ret)));
    }
    const uint32_t count = std::min<uint32_t>(info.nr_map_ids, 8);
    for (uint32_t i = 0; i < count; ++i) {
      core::UniqueFd map(bpf_map_get_fd_by_id(map_ids[i]));
      if (map.get() < 0) continue;
      bpf_map_info map_info{};
      uint32_t map_info_size = sizeof(map_info);
      if (bpf_obj_get_info_by_fd(map.get(), &map_info, &map_info_size) != 0) continue;
      if (std::strcmp(map_info.name, FC_ECN_COUNTS_MAP) != 0) continue;
      if (map_info.value_size != sizeof(fc_ecn_counts)) {
        return Status(StatusCode::kInternal,
                      "the marker on " + where + " has counters of another layout");
      }
      for (uint32_t cls = 0; cls < FC_ECN_CLASSES; ++cls) {
        fc_ecn_counts counts{};
        if (int ret = bpf_map_lookup_elem(map.get(), &cls, &counts); ret != 0) {
          return Status(StatusCode::kInternal, "reading the marker's counters on " + where,
                        errorOf(ret));
        }
        EcnClassCounts& out = cls == FC_ECN_CLASS_LOSSLESS ? marks.lossless : marks.best_effort;
        out = {counts.packets, counts.ect, counts.marked};
      }
      return Status::ok();
    }
    return Status(StatusCode::kNotFound,
                  "the program on " + where + "'s egress (id " + std::to_string(opts.prog_id) +
                      ") is not an ECN marker: it has no " FC_ECN_COUNTS_MAP " map");
  });
  if (!status.isOk()) return status;
  return marks;
}

}  // namespace fabric_chaos::sys
