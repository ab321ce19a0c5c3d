#include "injectors/sys/qdisc.h"

#include <linux/if.h>
#include <linux/netlink.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <netlink/netlink.h>
#include <netlink/route/link.h>
#include <netlink/route/qdisc.h>
#include <netlink/route/qdisc/tbf.h>
#include <netlink/route/tc.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <string_view>

#include "injectors/sys/netlink_status.h"
#include "injectors/sys/netns.h"
#include "injectors/sys/qdisc_raw.h"

namespace fabric_chaos::sys {

// --- Pure translation ---

uint32_t netemProbability(double percent) {
  if (!(percent > 0)) return 0;  // also NaN
  if (percent >= 100) return UINT32_MAX;
  return static_cast<uint32_t>(std::llround(percent / 100.0 * static_cast<double>(UINT32_MAX)));
}

double netemPercent(uint32_t probability) {
  double percent = static_cast<double>(probability) * 100.0 / static_cast<double>(UINT32_MAX);
  return std::round(percent * 1e6) / 1e6;
}

namespace {

constexpr int kPschedShift = 6;            // the kernel's PSCHED_SHIFT: a psched tick is 64 ns
constexpr int64_t kMaxJitterNs = INT_MAX;  // netem caps jitter to s32 ns (tabledist's sigma)
constexpr uint64_t kRate32Limit = 1ULL << 32;

core::Status invalidSpec(const std::string& field, const std::string& problem) {
  return core::Status(core::StatusCode::kInvalidArgument, "netem " + field + " " + problem);
}

uint32_t ticksOf(int64_t ns) {
  if (ns <= 0) return 0;
  uint64_t ticks = static_cast<uint64_t>(ns) >> kPschedShift;
  return ticks > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(ticks);
}

bool isSafeDistributionName(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-')) return false;
  }
  return true;
}

void appendAttribute(std::vector<uint8_t>& out, uint16_t type, const void* data, size_t len) {
  nlattr header{};
  header.nla_len = static_cast<uint16_t>(NLA_HDRLEN + len);
  header.nla_type = type;
  const auto* h = reinterpret_cast<const uint8_t*>(&header);
  out.insert(out.end(), h, h + NLA_HDRLEN);
  const auto* d = static_cast<const uint8_t*>(data);
  out.insert(out.end(), d, d + len);
  out.resize(NLA_ALIGN(out.size()), 0);
}

template <typename T>
void appendStruct(std::vector<uint8_t>& out, uint16_t type, const T& value) {
  appendAttribute(out, type, &value, sizeof(value));
}

// Walks the attributes in data[offset, end), calling fn(type, payload pointer, payload length).
// false when an attribute header is inconsistent.
template <typename Fn>
bool forEachAttribute(const uint8_t* data, size_t length, Fn fn) {
  size_t offset = 0;
  while (offset + NLA_HDRLEN <= length) {
    nlattr header{};
    std::memcpy(&header, data + offset, NLA_HDRLEN);
    if (header.nla_len < NLA_HDRLEN || offset + header.nla_len > length) return false;
    fn(static_cast<uint16_t>(header.nla_type & NLA_TYPE_MASK), data + offset + NLA_HDRLEN,
       static_cast<size_t>(header.nla_len - NLA_HDRLEN));
    offset += NLA_ALIGN(header.nla_len);
  }
  return true;
}

template <typename T>
bool readStruct(const uint8_t* data, size_t length, T& out) {
  if (length < sizeof(T)) return false;
  std::memcpy(&out, data, sizeof(T));
  return true;
}

}  // namespace

core::Status validateNetemSpec(const NetemSpec& spec) {
  struct Percent {
    const char* name;
    double value;
  };
  std::vector<Percent> percents = {{"loss", spec.loss_percent},
                                   {"loss correlation", spec.loss_correlation},
                                   {"delay correlation", spec.delay_correlation},
                                   {"duplicate", spec.duplicate_percent},
                                   {"duplicate correlation", spec.duplicate_correlation},
                                   {"corrupt", spec.corrupt_percent},
                                   {"corrupt correlation", spec.corrupt_correlation},
                                   {"reorder", spec.reorder_percent},
                                   {"reorder correlation", spec.reorder_correlation}};
  if (spec.gilbert_elliott) {
    percents.push_back({"Gilbert-Elliott p", spec.gilbert_elliott->p});
    percents.push_back({"Gilbert-Elliott r", spec.gilbert_elliott->r});
    percents.push_back({"Gilbert-Elliott h", spec.gilbert_elliott->h});
    percents.push_back({"Gilbert-Elliott k", spec.gilbert_elliott->k});
  }
  for (const Percent& p : percents) {
    if (!(p.value >= 0 && p.value <= 100)) return invalidSpec(p.name, "must be in 0..100%");
  }
  constexpr int64_t kMaxDelayUs = INT64_MAX / 1000;
  if (spec.delay_us < 0 || spec.delay_us > kMaxDelayUs) {
    return invalidSpec("delay", "must be in 0.." + std::to_string(kMaxDelayUs) + " us");
  }
  if (spec.jitter_us < 0 || spec.jitter_us * 1000 > kMaxJitterNs) {
    return invalidSpec("jitter", "must be in 0.." + std::to_string(kMaxJitterNs / 1000) + " us");
  }
  if (!spec.distribution.empty() && spec.distribution != "uniform" &&
      !isSafeDistributionName(spec.distribution)) {
    return invalidSpec("distribution", "'" + spec.distribution + "' is not a table name");
  }
  return core::Status::ok();
}

NetemAttributes netemAttributes(const NetemSpec& spec) {
  NetemAttributes a;
  a.latency_ns = spec.delay_us * 1000;
  a.jitter_ns = spec.jitter_us * 1000;
  a.latency_ticks = ticksOf(a.latency_ns);
  a.jitter_ticks = ticksOf(a.jitter_ns);
  a.limit = spec.limit_packets == 0 ? 1000 : spec.limit_packets;
  if (a.jitter_ns > 0) {
    a.delay_corr = netemProbability(spec.delay_correlation);
    if (spec.distribution != "uniform") a.distribution = spec.distribution;
  }
  if (spec.gilbert_elliott) {
    const GilbertElliott& ge = *spec.gilbert_elliott;
    a.ge = true;
    a.ge_p = netemProbability(ge.p);
    a.ge_r = netemProbability(ge.r);
    a.ge_h = netemProbability(ge.h);
    a.ge_k1 = netemProbability(100.0 - ge.k);
  } else {
    a.loss = netemProbability(spec.loss_percent);
    if (a.loss != 0) a.loss_corr = netemProbability(spec.loss_correlation);
  }
  a.duplicate = netemProbability(spec.duplicate_percent);
  if (a.duplicate != 0) a.dup_corr = netemProbability(spec.duplicate_correlation);
  a.corrupt = netemProbability(spec.corrupt_percent);
  if (a.corrupt != 0) a.corrupt_corr = netemProbability(spec.corrupt_correlation);
  a.reorder = netemProbability(spec.reorder_percent);
  if (a.reorder != 0) {
    a.reorder_corr = netemProbability(spec.reorder_correlation);
    // gap 0 would mean "never reorder" (every packet takes the delay path), so tc uses 1.
    a.gap = spec.reorder_gap == 0 ? 1 : spec.reorder_gap;
  }
  a.rate_bytes_per_sec = spec.rate_bytes_per_sec;
  return a;
}

// Every optional block is sent, zeros included, because netem_change() keeps the previous
// correlations, reorder, corrupt and rate when their attribute is absent: a change from
// "corrupt 5%" to "delay 10ms" must clear the corruption.
std::vector<uint8_t> encodeNetemOptions(const NetemAttributes& a,
                                        const std::vector<int16_t>& delay_table) {
  std::vector<uint8_t> out;
  tc_netem_qopt qopt{};
  qopt.latency = a.latency_ticks;
  qopt.limit = a.limit;
  qopt.loss = a.loss;
  qopt.gap = a.gap;
  qopt.duplicate = a.duplicate;
  qopt.jitter = a.jitter_ticks;
  const auto* q = reinterpret_cast<const uint8_t*>(&qopt);
  out.insert(out.end(), q, q + sizeof(qopt));
  out.resize(NLA_ALIGN(out.size()), 0);

  int64_t latency = a.latency_ns;
  int64_t jitter = a.jitter_ns;
  appendStruct(out, TCA_NETEM_LATENCY64, latency);
  appendStruct(out, TCA_NETEM_JITTER64, jitter);
  tc_netem_corr corr{a.delay_corr, a.loss_corr, a.dup_corr};
  appendStruct(out, TCA_NETEM_CORR, corr);
  tc_netem_reorder reorder{a.reorder, a.reorder_corr};
  appendStruct(out, TCA_NETEM_REORDER, reorder);
  tc_netem_corrupt corrupt{a.corrupt, a.corrupt_corr};
  appendStruct(out, TCA_NETEM_CORRUPT, corrupt);
  tc_netem_rate rate{};
  if (a.rate_bytes_per_sec >= kRate32Limit) {
    uint64_t rate64 = a.rate_bytes_per_sec;
    appendStruct(out, TCA_NETEM_RATE64, rate64);
    rate.rate = UINT32_MAX;
  } else {
    rate.rate = static_cast<uint32_t>(a.rate_bytes_per_sec);
  }
  appendStruct(out, TCA_NETEM_RATE, rate);
  uint32_t ecn = a.ecn;
  appendStruct(out, TCA_NETEM_ECN, ecn);
  if (a.ge) {
    std::vector<uint8_t> nested;
    tc_netem_gemodel ge{a.ge_p, a.ge_r, a.ge_h, a.ge_k1};
    appendStruct(nested, NETEM_LOSS_GE, ge);
    appendAttribute(out, TCA_NETEM_LOSS | NLA_F_NESTED, nested.data(), nested.size());
  }
  if (!delay_table.empty()) {
    appendAttribute(out, TCA_NETEM_DELAY_DIST, delay_table.data(),
                    delay_table.size() * sizeof(int16_t));
  }
  return out;
}

core::Result<NetemAttributes> decodeNetemOptions(const std::vector<uint8_t>& options) {
  tc_netem_qopt qopt{};
  if (!readStruct(options.data(), options.size(), qopt)) {
    return core::Status(core::StatusCode::kInvalidArgument,
                        "netem options are shorter than struct tc_netem_qopt");
  }
  NetemAttributes a;
  a.latency_ticks = qopt.latency;
  a.limit = qopt.limit;
  a.loss = qopt.loss;
  a.gap = qopt.gap;
  a.duplicate = qopt.duplicate;
  a.jitter_ticks = qopt.jitter;
  a.latency_ns = static_cast<int64_t>(qopt.latency) << kPschedShift;
  a.jitter_ns = static_cast<int64_t>(qopt.jitter) << kPschedShift;
  uint64_t rate64 = 0;
  bool malformed = false;
  const size_t start = NLA_ALIGN(sizeof(qopt));
  if (options.size() > start) {
    bool ok =
        forEachAttribute(options.data() + start, options.size() - start,
                         [&](uint16_t type, const uint8_t* data, size_t len) {
                           switch (type) {
                             case TCA_NETEM_LATENCY64:
                               malformed |= !readStruct(data, len, a.latency_ns);
                               break;
                             case TCA_NETEM_JITTER64:
                               malformed |= !readStruct(data, len, a.jitter_ns);
                               break;
                             case TCA_NETEM_CORR: {
                               tc_netem_corr corr{};
                               malformed |= !readStruct(data, len, corr);
                               a.delay_corr = corr.delay_corr;
                               a.loss_corr = corr.loss_corr;
                               a.dup_corr = corr.dup_corr;
                               break;
                             }
                             case TCA_NETEM_REORDER: {
                               tc_netem_reorder reorder{};
                               malformed |= !readStruct(data, len, reorder);
                               a.reorder = reorder.probability;
                               a.reorder_corr = reorder.correlation;
                               break;
                             }
                             case TCA_NETEM_CORRUPT: {
                               tc_netem_corrupt corrupt{};
                               malformed |= !readStruct(data, len, corrupt);
                               a.corrupt = corrupt.probability;
                               a.corrupt_corr = corrupt.correlation;
                               break;
                             }
                             case TCA_NETEM_RATE: {
                               tc_netem_rate rate{};
                               malformed |= !readStruct(data, len, rate);
                               a.rate_bytes_per_sec = rate.rate;
                               break;
                             }
                             case TCA_NETEM_RATE64:
                               malformed |= !readStruct(data, len, rate64);
                               break;
                             case TCA_NETEM_ECN:
                               malformed |= !readStruct(data, len, a.ecn);
                               break;
                             case TCA_NETEM_LOSS:
                               malformed |= !forEachAttribute(
                                   data, len, [&](uint16_t model, const uint8_t* m, size_t mlen) {
                                     if (model != NETEM_LOSS_GE) return;
                                     tc_netem_gemodel ge{};
                                     malformed |= !readStruct(m, mlen, ge);
                                     a.ge = true;
                                     a.ge_p = ge.p;
                                     a.ge_r = ge.r;
                                     a.ge_h = ge.h;
                                     a.ge_k1 = ge.k1;
                                   });
                               break;
                             default:
                               break;
                           }
                         });
    malformed |= !ok;
  }
  if (malformed) {
    return core::Status(core::StatusCode::kInvalidArgument, "netem options are malformed");
  }
  a.rate_bytes_per_sec = std::max(a.rate_bytes_per_sec, rate64);
  return a;
}

core::Result<std::vector<int16_t>> parseNetemDistTable(const std::string& text) {
  std::vector<int16_t> table;
  std::istringstream lines(text);
  std::string line;
  int line_number = 0;
  while (std::getline(lines, line)) {
    ++line_number;
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    std::string word;
    while (words >> word) {
      errno = 0;
      char* end = nullptr;
      long value = std::strtol(word.c_str(), &end, 0);
      if (end == word.c_str() || *end != '\0' || errno != 0 || value < INT16_MIN ||
          value > INT16_MAX) {
        return core::Status(core::StatusCode::kInvalidArgument,
                            "distribution table line " + std::to_string(line_number) + ": '" +
                                word + "' is not a 16-bit integer");
      }
      if (table.size() >= NETEM_DIST_MAX) {
        return core::Status(
            core::StatusCode::kInvalidArgument,
            "distribution table has more than " + std::to_string(NETEM_DIST_MAX) + " values");
      }
      table.push_back(static_cast<int16_t>(value));
    }
  }
  if (table.empty()) {
    return core::Status(core::StatusCode::kInvalidArgument, "distribution table is empty");
  }
  return table;
}

std::vector<std::string> netemDistributionDirs() {
  std::vector<std::string> dirs;
#if defined(__x86_64__)
  dirs.push_back("/usr/lib/x86_64-linux-gnu/tc");
#elif defined(__aarch64__)
  dirs.push_back("/usr/lib/aarch64-linux-gnu/tc");
#endif
  for (const char* dir : {"/usr/lib/tc", "/usr/lib64/tc", "/usr/local/lib/tc"}) {
    dirs.push_back(dir);
  }
  return dirs;
}

std::string formatQdiscHandle(uint32_t handle) {
  char text[32];
  std::snprintf(text, sizeof(text), "%x:%x", handle >> 16, handle & 0xffff);
  return text;
}

std::optional<uint32_t> parseQdiscHandle(const std::string& text) {
  size_t colon = text.find(':');
  if (colon == std::string::npos || colon == 0 || colon > 4) return std::nullopt;
  auto parseHex = [](const std::string& part) -> std::optional<uint32_t> {
    if (part.empty()) return 0u;
    if (part.size() > 4) return std::nullopt;
    uint32_t value = 0;
    for (char c : part) {
      int digit = -1;
      if (c >= '0' && c <= '9') digit = c - '0';
      if (c >= 'a' && c <= 'f') digit = c - 'a' + 10;
      if (c >= 'A' && c <= 'F') digit = c - 'A' + 10;
      if (digit < 0) return std::nullopt;
      value = value * 16 + static_cast<uint32_t>(digit);
    }
    return value;
  };
  auto major = parseHex(text.substr(0, colon));
  auto minor = parseHex(text.substr(colon + 1));
  if (!major || !minor) return std::nullopt;
  return (*major << 16) | *minor;
}

// --- The netlink adapter ---

namespace {

struct QdiscDeleter {
  void operator()(rtnl_qdisc* qdisc) const { rtnl_qdisc_put(qdisc); }
};
using QdiscPtr = std::unique_ptr<rtnl_qdisc, QdiscDeleter>;

// Root qdiscs whose classes are created by the user (not implied by their options).
constexpr std::string_view kUserClassKinds[] = {"htb", "hfsc", "drr", "qfq", "cbq"};

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

core::Result<std::vector<int16_t>> loadDistTable(const std::string& name) {
  std::string searched;
  for (const std::string& dir : netemDistributionDirs()) {
    const std::string path = dir + "/" + name + ".dist";
    std::ifstream file(path);
    if (!file) {
      searched += (searched.empty() ? "" : ", ") + dir;
      continue;
    }
    std::stringstream text;
    text << file.rdbuf();
    auto table = parseNetemDistTable(text.str());
    if (!table.isOk()) return table.status().withContext(path);
    return table;
  }
  return core::Status(core::StatusCode::kFailedPrecondition,
                      "no " + name + ".dist in " + searched + " (install iproute2)");
}

struct Root {
  std::optional<raw::TcObject> root;
  std::vector<raw::TcObject> all;  // every qdisc of the interface
};

core::Result<Root> dumpRoot(nl_sock* sock, int ifindex) {
  auto qdiscs = raw::dumpTc(sock, raw::TcDump::kQdiscs, ifindex, 0);
  if (!qdiscs.isOk()) return qdiscs.status();
  Root out;
  for (raw::TcObject& object : *qdiscs) {
    if (object.ifindex != ifindex) continue;
    if (object.parent == TC_H_ROOT && !out.root) out.root = object;
    out.all.push_back(std::move(object));
  }
  return out;
}

// Why netem + re-creation would not give the user back this root qdisc ("" when it would).
core::Result<std::string> unrestorableReason(nl_sock* sock, int ifindex, const Root& root) {
  const raw::TcObject& q = *root.root;
  if (raw::findAttribute(q, TCA_STAB) != nullptr) {
    return std::string("a size table (stab) is attached to it");
  }
  for (const raw::TcObject& other : root.all) {
    if (other.parent == TC_H_ROOT || other.parent == TC_H_INGRESS) continue;
    return "child qdisc " + other.kind + " " + formatQdiscHandle(other.handle) + " hangs off it";
  }
  if (std::find(std::begin(kUserClassKinds), std::end(kUserClassKinds), q.kind) !=
      std::end(kUserClassKinds)) {
    auto classes = raw::dumpTc(sock, raw::TcDump::kClasses, ifindex, 0);
    if (!classes.isOk()) return classes.status();
    if (!classes->empty()) return std::string("it has classes");
  }
  auto filters = raw::dumpTc(sock, raw::TcDump::kFilters, ifindex, q.handle);
  if (!filters.isOk()) return filters.status();
  if (!filters->empty()) return std::string("filters are attached to it");
  return std::string();
}

// A qdisc major nobody on the interface uses, for a netem that must be created fresh.
uint32_t freeHandle(const Root& root) {
  std::set<uint32_t> used;
  for (const raw::TcObject& object : root.all) used.insert(object.handle & 0xffff0000U);
  for (uint32_t major = 0xfc00; major < 0xffff; ++major) {
    if (used.count(major << 16) == 0) return major << 16;
  }
  return 0;
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
      auto root = dumpRoot(sock->get(), *ifindex);
      if (!root.isOk()) return root.status();
      if (root->root) info = raw::qdiscInfoOf(*root->root);
      return core::Status::ok();
    });
    if (!status.isOk()) return status;
    return info;
  }

  core::Status replaceRootNetem(const std::string& netns, const std::string& ifname,
                                const NetemSpec& spec) override {
    if (!isValidIfname(ifname)) return invalidIfname(ifname);
    FC_RETURN_IF_ERROR(validateNetemSpec(spec));
    const NetemAttributes attributes = netemAttributes(spec);
    std::vector<int16_t> table;
    if (!attributes.distribution.empty()) {
      auto loaded = loadDistTable(attributes.distribution);
      if (!loaded.isOk()) return loaded.status();
      table = std::move(*loaded);
    }
    const std::vector<RawAttribute> message = {
        RawAttribute{TCA_OPTIONS, encodeNetemOptions(attributes, table)}};
    return runInNetns(netns, [&]() -> core::Status {
      auto sock = connectRoute();
      if (!sock.isOk()) return sock.status();
      auto ifindex = ifindexOf(sock->get(), netns, ifname);
      if (!ifindex.isOk()) return ifindex.status();
      auto root = dumpRoot(sock->get(), *ifindex);
      if (!root.isOk()) return root.status();
      // Handle 0 + NLM_F_CREATE|NLM_F_REPLACE: a root netem is changed in place, any other root
      // is replaced (a kind mismatch makes the kernel create and graft). A netem that could keep
      // a delay table or time slots we do not override is replaced by one with a fresh handle.
      uint32_t handle = 0;
      const raw::TcObject* current = root->root ? &*root->root : nullptr;
      if (current != nullptr && current->kind == "netem" && current->handle != 0) {
        const RawAttribute* options = raw::findAttribute(*current, TCA_OPTIONS);
        bool has_slot = false;
        if (options != nullptr && options->data.size() > NLA_ALIGN(sizeof(tc_netem_qopt))) {
          forEachAttribute(
              options->data.data() + NLA_ALIGN(sizeof(tc_netem_qopt)),
              options->data.size() - NLA_ALIGN(sizeof(tc_netem_qopt)),
              [&](uint16_t type, const uint8_t*, size_t) { has_slot |= type == TCA_NETEM_SLOT; });
        }
        bool stale_table = attributes.jitter_ns > 0 && attributes.distribution.empty();
        if (has_slot || stale_table) handle = freeHandle(*root);
      }
      core::Status status = raw::newQdisc(sock->get(), *ifindex, TC_H_ROOT, handle, "netem",
                                          message, NLM_F_CREATE | NLM_F_REPLACE);
      if (status.code() == core::StatusCode::kNotFound) {
        // The device was just resolved, so "not found" means the kernel has no sch_netem.
        return core::Status(core::StatusCode::kNotSupported, "sch_netem is not in this kernel",
                            status.origin());
      }
      return status.withContext("cannot attach netem to " + ifname);
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

  core::Result<std::optional<SavedQdisc>> saveRoot(const std::string& netns,
                                                   const std::string& ifname) override {
    if (!isValidIfname(ifname)) return invalidIfname(ifname);
    std::optional<SavedQdisc> saved;
    core::Status status = runInNetns(netns, [&]() -> core::Status {
      auto sock = connectRoute();
      if (!sock.isOk()) return sock.status();
      auto ifindex = ifindexOf(sock->get(), netns, ifname);
      if (!ifindex.isOk()) return ifindex.status();
      auto root = dumpRoot(sock->get(), *ifindex);
      if (!root.isOk()) return root.status();
      if (!root->root) return core::Status::ok();
      SavedQdisc out;
      out.kind = root->root->kind;
      out.handle = root->root->handle;
      for (const RawAttribute& attribute : root->root->attributes) {
        // Configuration only: statistics, hardware-offload flags and padding are the kernel's.
        if (attribute.type == TCA_OPTIONS || attribute.type == TCA_INGRESS_BLOCK ||
            attribute.type == TCA_EGRESS_BLOCK) {
          out.attributes.push_back(attribute);
        }
      }
      if (!out.isKernelDefault()) {
        auto reason = unrestorableReason(sock->get(), *ifindex, *root);
        if (!reason.isOk()) return reason.status();
        out.unrestorable = *reason;
      }
      saved = std::move(out);
      return core::Status::ok();
    });
    if (!status.isOk()) return status;
    return saved;
  }

  core::Status restoreRoot(const std::string& netns, const std::string& ifname,
                           const SavedQdisc& saved) override {
    if (!isValidIfname(ifname)) return invalidIfname(ifname);
    if (saved.isKernelDefault()) return core::Status::ok();
    if (!isValidKind(saved.kind)) {
      return core::Status(core::StatusCode::kInvalidArgument,
                          "invalid qdisc kind '" + saved.kind + "'");
    }
    return runInNetns(netns, [&]() -> core::Status {
      auto sock = connectRoute();
      if (!sock.isOk()) return sock.status();
      auto ifindex = ifindexOf(sock->get(), netns, ifname);
      if (!ifindex.isOk()) return ifindex.status();
      // With a handle and no NLM_F_REPLACE the kernel refuses (EEXIST) to override a root that
      // is not the default one, so a user's qdisc that came back meanwhile is never clobbered.
      return raw::newQdisc(sock->get(), *ifindex, TC_H_ROOT, saved.handle, saved.kind,
                           saved.attributes, NLM_F_CREATE | NLM_F_EXCL)
          .withContext("cannot restore root qdisc " + saved.kind + " " +
                       formatQdiscHandle(saved.handle) + " on " + ifname);
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
