#include "injectors/sys/tc_bpf.h"

#include <bpf/bpf.h>
#include <linux/bpf.h>
#include <net/if.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "core/unique_fd.h"
#include "injectors/sys/netns.h"

namespace fabric_chaos::sys::tc_bpf {
namespace {

using core::Status;
using core::StatusCode;

// libbpf reports the kernel's extended ack ("Parent Qdisc doesn't exists") and its own warnings
// through one process-wide print callback, to stderr by default: lines in the middle of `lab up`'s
// progress, mostly about outcomes we expect (querying an empty slot, a clsact qdisc already
// there). Instead, while one of our operations runs, a thread's lines are collected in its
// LibbpfLines, and a failure quotes the last; lines from nowhere else are dropped.
thread_local std::vector<std::string>* tl_libbpf_lines = nullptr;

int collectLibbpfLine(libbpf_print_level level, const char* format, va_list args) {
  if (level == LIBBPF_DEBUG || tl_libbpf_lines == nullptr) return 0;
  char line[512];
  if (std::vsnprintf(line, sizeof(line), format, args) <= 0) return 0;
  std::string text(line);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  if (!text.empty()) tl_libbpf_lines->push_back(std::move(text));
  return 0;
}

// Collects what libbpf prints on this thread for as long as it lives (nests).
class LibbpfLines {
 public:
  LibbpfLines() : outer_(tl_libbpf_lines) {
    static std::once_flag installed;
    std::call_once(installed, [] { libbpf_set_print(collectLibbpfLine); });
    tl_libbpf_lines = &lines_;
  }
  ~LibbpfLines() { tl_libbpf_lines = outer_; }
  LibbpfLines(const LibbpfLines&) = delete;
  LibbpfLines& operator=(const LibbpfLines&) = delete;

  // " (libbpf: <its last line>)", or "" when it said nothing.
  std::string last() const { return lines_.empty() ? "" : " (libbpf: " + lines_.back() + ")"; }
  // Forgets what it said so far, so that last() cannot quote an earlier, expected complaint.
  void clear() { lines_.clear(); }

 private:
  std::vector<std::string>* outer_;
  std::vector<std::string> lines_;
};

// The last non-empty line of a verifier log: the reason it refused.
std::string lastLine(const std::vector<char>& log) {
  std::string text(log.data(), strnlen(log.data(), log.size()));
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  const size_t newline = text.rfind('\n');
  return newline == std::string::npos ? text : text.substr(newline + 1);
}

bpf_tc_hook hookOf(int ifindex, const FilterSlot& slot) {
  bpf_tc_hook hook{};
  hook.sz = sizeof(hook);
  hook.ifindex = ifindex;
  hook.attach_point = slot.hook;
  return hook;
}

bpf_tc_opts filterOf(const FilterSlot& slot) {
  bpf_tc_opts opts{};
  opts.sz = sizeof(opts);
  opts.handle = slot.handle;
  opts.priority = slot.priority;
  return opts;
}

const char* hookName(const FilterSlot& slot) {
  return slot.hook == BPF_TC_INGRESS ? "ingress" : "egress";
}

// Opens the embedded object, lets `configure` prepare it and loads it into the kernel.
core::Result<ObjectPtr> load(const EmbeddedObject& embedded, const std::string& where,
                             const ObjectConfigurer& configure, const LibbpfLines& libbpf) {
  std::vector<char> log(64 * 1024, '\0');
  bpf_object_open_opts open_opts{};
  open_opts.sz = sizeof(open_opts);
  open_opts.object_name = embedded.object_name;
  open_opts.kernel_log_buf = log.data();
  open_opts.kernel_log_size = log.size();
  ObjectPtr object(bpf_object__open_mem(embedded.bytes, embedded.size, &open_opts));
  if (!object) {
    const int err = errno;
    return Status(StatusCode::kInternal,
                  std::string("libbpf cannot open the embedded object of ") + embedded.description +
                      ": " + strerror(err) + libbpf.last(),
                  err);
  }
  if (configure) FC_RETURN_IF_ERROR(configure(object.get()));
  if (int ret = bpf_object__load(object.get()); ret != 0) {
    const int err = errorOf(ret);
    const std::string what = std::string("loading ") + embedded.description + " for " + where;
    const std::string verifier = lastLine(log);
    if (err == ENOSYS) {
      return Status(StatusCode::kNotSupported, what + ": this kernel has no bpf() system call",
                    err);
    }
    std::string why = "the kernel refused it (" + std::string(strerror(err)) + ")";
    if (!verifier.empty()) {
      why += "; verifier: " + verifier;
    } else if (*embedded.silent_refusal_hint != '\0') {
      why += std::string("; ") + embedded.silent_refusal_hint;
    } else {
      why += libbpf.last();
    }
    return permissionOr(err, what, StatusCode::kNotSupported, why);
  }
  return object;
}

}  // namespace

std::string portName(const std::string& netns, const std::string& ifname) {
  return (netns.empty() ? "" : netns + ":") + ifname;
}

int errorOf(int ret) { return ret < 0 ? -ret : (errno != 0 ? errno : EINVAL); }

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

core::Result<ObjectPtr> loadObject(const EmbeddedObject& object, const std::string& where,
                                   const ObjectConfigurer& configure) {
  LibbpfLines libbpf;
  return load(object, where, configure, libbpf);
}

Status attachProgram(int program_fd, const std::string& ifname, const std::string& where,
                     const FilterSlot& slot, const char* description) {
  LibbpfLines libbpf;
  auto ifindex = ifindexOf("", ifname);
  if (!ifindex.isOk()) return ifindex.status();
  bpf_tc_hook hook = hookOf(*ifindex, slot);
  if (int ret = bpf_tc_hook_create(&hook); ret != 0 && ret != -EEXIST) {
    return permissionOr(
        errorOf(ret), "adding a clsact qdisc to " + where, StatusCode::kNotSupported,
        std::string(strerror(errorOf(ret))) + " (is cls_bpf/clsact built?)" + libbpf.last());
  }
  libbpf.clear();  // a clsact qdisc already there is no failure
  bpf_tc_opts opts = filterOf(slot);
  opts.prog_fd = program_fd;
  opts.flags = BPF_TC_F_REPLACE;
  if (int ret = bpf_tc_attach(&hook, &opts); ret != 0) {
    return permissionOr(
        errorOf(ret),
        std::string("attaching ") + description + " to " + where + "'s " + hookName(slot),
        StatusCode::kNotSupported, strerror(errorOf(ret)) + libbpf.last());
  }
  return Status::ok();
}

Status loadAndAttach(const std::string& netns, const std::string& ifname,
                     const EmbeddedObject& embedded, const FilterSlot& slot,
                     const ObjectConfigurer& configure) {
  const std::string where = portName(netns, ifname);
  return runInNetns(netns, [&]() -> Status {
    auto ifindex = ifindexOf(netns, ifname);
    if (!ifindex.isOk()) return ifindex.status();
    auto object = loadObject(embedded, where, configure);
    if (!object.isOk()) return object.status();
    bpf_program* program = bpf_object__find_program_by_name(object->get(), embedded.program_name);
    if (program == nullptr) {
      return Status(StatusCode::kInternal, std::string("the embedded object of ") +
                                               embedded.description + " has no program " +
                                               embedded.program_name);
    }
    // The filter then holds the program and the program its maps; the object can go.
    return attachProgram(bpf_program__fd(program), ifname, where, slot, embedded.description);
  });
}

core::Result<std::optional<uint32_t>> programInSlot(int ifindex, const FilterSlot& slot,
                                                    const std::string& where) {
  const LibbpfLines libbpf;
  bpf_tc_hook hook = hookOf(ifindex, slot);
  bpf_tc_opts opts = filterOf(slot);
  if (int ret = bpf_tc_query(&hook, &opts); ret != 0) {
    // ENOENT: no filter in the slot; EINVAL: no clsact qdisc to hold one.
    if (ret == -ENOENT || ret == -EINVAL) return std::optional<uint32_t>();
    return permissionOr(errorOf(ret), "querying " + where + "'s " + hookName(slot) + " filters",
                        StatusCode::kInternal, strerror(errorOf(ret)) + libbpf.last());
  }
  return std::optional<uint32_t>(opts.prog_id);
}

core::Result<std::string> programName(uint32_t id) {
  const LibbpfLines libbpf;
  core::UniqueFd program(bpf_prog_get_fd_by_id(id));
  if (program.get() < 0) {
    const int err = errno;
    return permissionOr(err, "opening program " + std::to_string(id), StatusCode::kNotFound,
                        strerror(err));
  }
  bpf_prog_info info{};
  uint32_t info_size = sizeof(info);
  if (int ret = bpf_obj_get_info_by_fd(program.get(), &info, &info_size); ret != 0) {
    return permissionOr(errorOf(ret), "reading program " + std::to_string(id),
                        StatusCode::kInternal, strerror(errorOf(ret)));
  }
  return std::string(info.name, strnlen(info.name, sizeof(info.name)));
}

Status detachFromSlot(const std::string& netns, const std::string& ifname, const FilterSlot& slot) {
  const std::string where = portName(netns, ifname);
  return runInNetns(netns, [&]() -> Status {
    const LibbpfLines libbpf;
    auto ifindex = ifindexOf(netns, ifname);
    if (!ifindex.isOk()) return ifindex.status();
    bpf_tc_hook hook = hookOf(*ifindex, slot);
    bpf_tc_opts opts = filterOf(slot);
    const int ret = bpf_tc_detach(&hook, &opts);
    // ENOENT: the slot is empty; EINVAL: the port has no clsact qdisc.
    if (ret == 0 || ret == -ENOENT || ret == -EINVAL) return Status::ok();
    return permissionOr(errorOf(ret),
                        "removing filter " + std::to_string(slot.handle) + " from " + where +
                            "'s " + hookName(slot),
                        StatusCode::kInternal, strerror(errorOf(ret)) + libbpf.last());
  });
}

}  // namespace fabric_chaos::sys::tc_bpf
