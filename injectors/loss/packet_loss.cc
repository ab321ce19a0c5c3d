#include "injectors/loss/packet_loss.h"

#include <cmath>
#include <utility>

#include "injectors/model/packet_loss_spec.h"
#include "injectors/sys/nftables.h"
#include "injectors/sys/qdisc.h"

namespace fabric_chaos::injectors {
namespace {

constexpr const char* kFamily = "netdev";
constexpr int64_t kNumgenModulus = 1000000;

core::Status invalid(const std::string& param, const std::string& problem) {
  return core::Status(core::StatusCode::kInvalidArgument, param + ": " + problem);
}

std::string directionOf(const json& params) {
  auto it = params.find("direction");
  return it == params.end() ? std::string("both") : it->get<std::string>();
}

double numberOr(const json& params, const char* name, double fallback) {
  auto it = params.find(name);
  return it == params.end() ? fallback : it->get<double>();
}

std::vector<std::string> hooksFor(const std::string& direction) {
  if (direction == "ingress") return {"ingress"};
  if (direction == "egress") return {"egress"};
  return {"ingress", "egress"};
}

// Interface names end up inside a quoted nft string; refuse anything that could break out.
bool isSafeIfname(const std::string& ifname) {
  if (ifname.empty() || ifname.size() > 15) return false;
  for (unsigned char c : ifname) {
    if (c <= ' ' || c >= 0x7f || c == '"' || c == '\'' || c == '\\' || c == '/' || c == ';' ||
        c == '#') {
      return false;
    }
  }
  return true;
}

}  // namespace

const char* lossBackendName(LossBackend backend) {
  switch (backend) {
    case LossBackend::kNetem:
      return "netem";
    case LossBackend::kNftables:
      return "nftables";
    case LossBackend::kNone:
      return "none";
  }
  return "none";
}

std::string nftLossTableName(const std::string& ifname) {
  std::string name = "fc_loss_";
  for (char c : ifname) {
    bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    name += plain ? c : '_';
  }
  return name;
}

int64_t nftLossThreshold(double percent) {
  if (!(percent > 0)) return 0;
  if (percent >= 100) return kNumgenModulus;
  int64_t threshold = std::llround(percent * 10000.0);
  return threshold < 1 ? 1 : threshold;
}

std::vector<std::string> nftLossScripts(const std::string& ifname, double percent,
                                        const std::vector<std::string>& hooks) {
  const std::string table = std::string(kFamily) + " " + nftLossTableName(ifname);
  const std::string threshold = std::to_string(nftLossThreshold(percent));
  std::vector<std::string> scripts;
  scripts.push_back("add table " + table);
  for (const std::string& hook : hooks) {
    const std::string chain = table + " loss_" + hook;
    // priority -500: before anything else on the device, so every packet is counted.
    scripts.push_back("add chain " + chain + " { type filter hook " + hook + " device \"" + ifname +
                      "\" priority -500; policy accept; }");
    // At 100 % the threshold equals the modulus, which nft refuses ("Value 1000000 exceeds valid
    // range 0-999999"): every packet is dropped, so the rule needs no random number at all.
    const std::string match =
        nftLossThreshold(percent) >= kNumgenModulus
            ? std::string()
            : "numgen random mod " + std::to_string(kNumgenModulus) + " < " + threshold + " ";
    scripts.push_back("add rule " + chain + " counter\nadd rule " + chain + " " + match +
                      "counter drop");
  }
  return scripts;
}

std::string nftLossProbeScript() {
  std::string script = "add table netdev fc_probe\n";
  for (const char* hook : {"ingress", "egress"}) {
    script += std::string("add chain netdev fc_probe probe_") + hook + " { type filter hook " +
              hook + " device \"lo\" priority -500; }\n";
    script += std::string("add rule netdev fc_probe probe_") + hook +
              " numgen random mod 1000000 < 1 counter drop\n";
  }
  return script;
}

LossCounters nftLossCounters(const json& listing) {
  LossCounters counters;
  auto items = listing.find("nftables");
  if (items == listing.end() || !items->is_array()) return counters;
  for (const json& item : *items) {
    auto rule = item.find("rule");
    if (rule == item.end() || !rule->is_object()) continue;
    auto expr = rule->find("expr");
    if (expr == rule->end() || !expr->is_array()) continue;
    bool drops = false;
    uint64_t packets = 0;
    for (const json& statement : *expr) {
      if (!statement.is_object()) continue;
      if (statement.contains("drop")) drops = true;
      auto counter = statement.find("counter");
      if (counter != statement.end() && counter->is_object()) {
        auto value = counter->find("packets");
        if (value != counter->end() && value->is_number_unsigned()) {
          packets += value->get<uint64_t>();
        }
      }
    }
    (drops ? counters.dropped : counters.seen) += packets;
  }
  return counters;
}

std::optional<LossBackend> parseLossBackend(const std::string& name) {
  if (name == "netem") return LossBackend::kNetem;
  if (name == "nftables") return LossBackend::kNftables;
  return std::nullopt;
}

namespace {

LossBackends onlyBackend(LossBackend backend, const std::string& reason) {
  LossBackends backends;
  backends.netem = backend == LossBackend::kNetem;
  backends.nftables = backend == LossBackend::kNftables;
  backends.netem_problem = backends.netem ? "" : (reason.empty() ? "not configured" : reason);
  backends.nftables_problem = backends.nftables ? "" : (reason.empty() ? "not configured" : reason);
  backends.preferred = backend;
  backends.reason = reason;
  return backends;
}

}  // namespace

PacketLoss::PacketLoss(LossBackends backends, sys::Qdiscs* qdiscs, sys::Nftables* nftables)
    : backends_(std::move(backends)),
      qdiscs_(qdiscs),
      nftables_(nftables),
      netem_(qdiscs, backends_.netem, backends_.netem_problem) {
  if (qdiscs_ == nullptr && backends_.netem) {
    backends_.netem = false;
    backends_.netem_problem = "no qdisc adapter";
  }
  if (nftables_ == nullptr && backends_.nftables) {
    backends_.nftables = false;
    backends_.nftables_problem = "no nftables adapter";
  }
}

PacketLoss::PacketLoss(LossBackend backend, sys::Qdiscs* qdiscs, sys::Nftables* nftables,
                       std::string reason)
    : PacketLoss(onlyBackend(backend, reason), qdiscs, nftables) {}

const KindSpec& PacketLoss::spec() const { return packetLossSpec(); }

KindInfo PacketLoss::info() const {
  KindInfo info;
  info.kind = kKind;
  info.description = spec().summary;
  info.available = checkAvailable(backends_.preferred).isOk();
  info.reason = backends_.reason;
  info.backend = lossBackendName(backends_.preferred);
  return info;
}

LossBackend PacketLoss::backendFor(const json& params) const {
  if (params.is_object()) {
    auto it = params.find("backend");
    if (it != params.end() && it->is_string()) {
      if (auto parsed = parseLossBackend(it->get<std::string>())) return *parsed;
    }
  }
  return backends_.preferred;
}

// kNotSupported (501) with the reason: the kernel (or the wiring) lacks this backend.
core::Status PacketLoss::checkAvailable(LossBackend backend) const {
  switch (backend) {
    case LossBackend::kNetem:
      if (backends_.netem) return core::Status::ok();
      return core::Status(
          core::StatusCode::kNotSupported,
          "the netem loss backend is not available here: " + backends_.netem_problem);
    case LossBackend::kNftables:
      if (backends_.nftables) return core::Status::ok();
      return core::Status(
          core::StatusCode::kNotSupported,
          "the nftables loss backend is not available here: " + backends_.nftables_problem);
    case LossBackend::kNone:
      break;
  }
  return core::Status(core::StatusCode::kNotSupported,
                      "packet_loss is unavailable: " + backends_.reason);
}

core::Status PacketLoss::validate(const json& params) const {
  FC_RETURN_IF_ERROR(checkParams(spec(), params));
  auto forced = params.find("backend");
  const LossBackend backend = backendFor(params);
  if (forced != params.end()) {
    if (core::Status usable = checkAvailable(backend); !usable.isOk()) {
      return unacceptableParam("backend", usable.message());
    }
  }
  // netem is an egress qdisc. Ingress would need the packets redirected through an IFB device,
  // which this injector does not do; say so instead of silently dropping on one side only.
  const std::string dir = directionOf(params);
  if (backend == LossBackend::kNetem && dir != "egress") {
    return unacceptableParam(
        "direction",
        "\"" + dir + "\"" + (params.contains("direction") ? "" : " (the default)") +
            " needs loss on ingress, which the netem backend cannot do (netem is an egress "
            "qdisc; there is no IFB redirect): use \"direction\": \"egress\" and a second "
            "packet_loss step with \"direction\": \"egress\" on the other end of the link "
            "(target side \"host\" or \"switch\"), or \"backend\": \"nftables\"");
  }
  auto correlation = params.find("correlation");
  // 0 is "no correlation", which every backend does; reject only a real request.
  if (correlation != params.end() && backend != LossBackend::kNetem &&
      correlation->get<double>() != 0) {
    return unacceptableParam(
        "correlation", backends_.netem ? "needs the netem backend; this fault uses nftables"
                                       : "needs the netem backend; this kernel has no sch_netem");
  }
  return core::Status::ok();
}

core::Result<InterfaceTarget> PacketLoss::checkTarget(const Fault& fault) const {
  auto target = requireInterface(kKind, fault.target);
  if (!target.isOk()) return target.status();
  if (target->ifname.empty()) return invalid("target.ifname", "required");
  if (!isSafeIfname(target->ifname)) {
    return invalid("target.ifname", "'" + target->ifname + "' is not an interface name");
  }
  return target;
}

// Netem's refusal of a root it could not give back, told as packet_loss's, with the way out this
// kind has and the netem kind has not. Other errors keep the netem kind's context.
core::Status explainNetemRefusal(core::Status status, const char* what,
                                 const InterfaceTarget& target) {
  if (status.code() != core::StatusCode::kFailedPrecondition) return status;
  return core::Status(status.code(),
                      std::string("packet_loss ") + what + " on " + target.ifname + ": " +
                          status.message() +
                          " (or use \"backend\": \"nftables\", which leaves qdiscs alone)",
                      status.origin());
}

// The same fault in the netem kind's vocabulary.
Fault PacketLoss::netemFault(const Fault& fault) const {
  Fault netem = fault;
  netem.kind = Netem::kKind;
  netem.params = json{{"loss_percent", numberOr(fault.params, "percent", 0)}};
  const double correlation = numberOr(fault.params, "correlation", 0);
  if (correlation > 0) netem.params["loss_correlation"] = correlation;
  return netem;
}

core::Result<json> PacketLoss::capture(const Fault& fault) {
  auto target = checkTarget(fault);
  if (!target.isOk()) return target.status();
  const LossBackend backend = backendFor(fault.params);
  FC_RETURN_IF_ERROR(checkAvailable(backend));
  if (backend == LossBackend::kNetem) {
    auto root = netem_.capture(netemFault(fault));
    if (!root.isOk()) return explainNetemRefusal(root.status(), "capture", *target);
    return json{{"backend", "netem"}, {"root", *root}};
  }
  return json{{"backend", lossBackendName(backend)}};
}

core::Status PacketLoss::apply(const Fault& fault) {
  auto target = checkTarget(fault);
  if (!target.isOk()) return target.status();
  FC_RETURN_IF_ERROR(validate(fault.params));
  const LossBackend backend = backendFor(fault.params);
  FC_RETURN_IF_ERROR(checkAvailable(backend));
  if (backend == LossBackend::kNetem) {
    // Netem::apply refuses a root it could not give back, like capture().
    return explainNetemRefusal(netem_.apply(netemFault(fault)), "apply", *target);
  }
  return applyNftables(*target, fault.params);
}

core::Status PacketLoss::applyNftables(const InterfaceTarget& target, const json& params) {
  const std::string context = "packet_loss apply on " + target.ifname;
  // Re-applying replaces the previous table, so a changed percent takes effect.
  FC_RETURN_IF_ERROR(revertNftables(target).withContext(context));
  for (const std::string& script : nftLossScripts(target.ifname, numberOr(params, "percent", 0),
                                                  hooksFor(directionOf(params)))) {
    FC_RETURN_IF_ERROR(nftables_->run(target.netns, script).withContext(context));
  }
  return core::Status::ok();
}

core::Status PacketLoss::revert(const Fault& fault, const json& prior) {
  auto target = checkTarget(fault);
  if (!target.isOk()) return target.status();
  LossBackend backend = backendFor(fault.params);
  json root;  // null: no saved root (the kernel default is the best guess)
  if (prior.is_object()) {
    auto it = prior.find("backend");
    if (it != prior.end() && it->is_string()) {
      if (auto parsed = parseLossBackend(it->get<std::string>())) backend = *parsed;
    }
    if (auto saved = prior.find("root"); saved != prior.end()) root = *saved;
  }
  switch (backend) {
    case LossBackend::kNetem: {
      if (qdiscs_ == nullptr) {
        return core::Status(core::StatusCode::kNotSupported, "no qdisc adapter");
      }
      return netem_.revert(netemFault(fault), root);
    }
    case LossBackend::kNftables:
      if (nftables_ == nullptr) {
        return core::Status(core::StatusCode::kNotSupported, "no nftables adapter");
      }
      return revertNftables(*target);
    case LossBackend::kNone:
      break;
  }
  return core::Status::ok();  // nothing can have been applied
}

// kNotFound from listTable covers both "no table" and "no namespace": either way nothing of
// ours is left.
core::Status PacketLoss::revertNftables(const InterfaceTarget& target) {
  const std::string table = nftLossTableName(target.ifname);
  auto listing = nftables_->listTable(target.netns, kFamily, table);
  if (listing.status().code() == core::StatusCode::kNotFound) return core::Status::ok();
  if (!listing.isOk()) {
    return listing.status().withContext("packet_loss revert on " + target.ifname);
  }
  core::Status status =
      nftables_->run(target.netns, std::string("delete table ") + kFamily + " " + table);
  if (status.code() == core::StatusCode::kNotFound) return core::Status::ok();
  return status.withContext("packet_loss revert on " + target.ifname);
}

core::Result<json> PacketLoss::observe(const Fault& fault) {
  auto target = checkTarget(fault);
  if (!target.isOk()) return target.status();
  const std::string context = "packet_loss observe on " + target->ifname;
  const LossBackend backend = backendFor(fault.params);
  if (backend == LossBackend::kNetem && qdiscs_ != nullptr) {
    auto root = qdiscs_->getRoot(target->netns, target->ifname);
    if (!root.isOk()) return root.status().withContext(context);
    json out{{"backend", "netem"}, {"active", false}, {"seen", 0}, {"dropped", 0}};
    if (root->has_value()) {
      const sys::QdiscInfo& qdisc = **root;
      out["qdisc"] = qdisc.kind;
      out["active"] = qdisc.kind == "netem";
      if (qdisc.kind == "netem") {
        out["seen"] = qdisc.packets + qdisc.drops;  // netem counts its losses as drops
        out["dropped"] = qdisc.drops;
      }
    }
    return out;
  }
  if (backend == LossBackend::kNftables && nftables_ != nullptr) {
    auto listing = nftables_->listTable(target->netns, kFamily, nftLossTableName(target->ifname));
    if (listing.status().code() == core::StatusCode::kNotFound) {
      return json{{"backend", "nftables"}, {"active", false}, {"seen", 0}, {"dropped", 0}};
    }
    if (!listing.isOk()) return listing.status().withContext(context);
    LossCounters counters = nftLossCounters(*listing);
    return json{{"backend", "nftables"},
                {"active", true},
                {"seen", counters.seen},
                {"dropped", counters.dropped}};
  }
  core::Status unavailable = checkAvailable(backend);
  if (unavailable.isOk()) {
    unavailable = core::Status(core::StatusCode::kNotSupported, "no adapter for the backend");
  }
  return unavailable;
}

}  // namespace fabric_chaos::injectors
