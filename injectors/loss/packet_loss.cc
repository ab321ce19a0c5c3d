#include "injectors/loss/packet_loss.h"

#include <cmath>

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

PacketLoss::PacketLoss(LossBackend backend, sys::Qdiscs* qdiscs, sys::Nftables* nftables,
                       std::string reason)
    : backend_(backend), qdiscs_(qdiscs), nftables_(nftables), reason_(std::move(reason)) {}

KindInfo PacketLoss::info() const {
  KindInfo info;
  info.kind = kKind;
  info.description =
      "Drops a percentage of the packets crossing an interface (percent, direction; correlation "
      "with netem).";
  info.available = backend_ != LossBackend::kNone;
  info.reason = reason_;
  info.backend = lossBackendName(backend_);
  return info;
}

core::Status PacketLoss::validate(const json& params) const {
  if (!params.is_object()) return invalid("params", "must be an object");
  for (const auto& [key, value] : params.items()) {
    if (key != "percent" && key != "direction" && key != "correlation") {
      return invalid(key, "unknown parameter (expected percent, direction, correlation)");
    }
  }
  auto percent = params.find("percent");
  if (percent == params.end()) return invalid("percent", "required");
  if (!percent->is_number() || !(percent->get<double>() > 0) || percent->get<double>() > 100) {
    return invalid("percent", "must be a number in (0, 100]");
  }
  auto direction = params.find("direction");
  if (direction != params.end()) {
    if (!direction->is_string() ||
        (*direction != "both" && *direction != "ingress" && *direction != "egress")) {
      return invalid("direction", "must be one of both, ingress, egress");
    }
    // netem is an egress qdisc: "both" means the egress of the target interface (pick the
    // peer's interface for the other direction); "ingress" would need an IFB redirect.
    if (backend_ == LossBackend::kNetem && *direction == "ingress") {
      return invalid("direction", "ingress needs the nftables backend; netem only acts on egress");
    }
  }
  auto correlation = params.find("correlation");
  if (correlation != params.end()) {
    if (!correlation->is_number() || correlation->get<double>() < 0 ||
        correlation->get<double>() > 100) {
      return invalid("correlation", "must be a number in 0..100");
    }
    // 0 is "no correlation", which every backend does; reject only a real request.
    if (backend_ != LossBackend::kNetem && correlation->get<double>() != 0) {
      return invalid("correlation", "needs the netem backend; this kernel has no sch_netem");
    }
  }
  return core::Status::ok();
}

core::Status PacketLoss::checkTarget(const Fault& fault) const {
  if (fault.target.ifname.empty()) return invalid("target.ifname", "required");
  if (!isSafeIfname(fault.target.ifname)) {
    return invalid("target.ifname", "'" + fault.target.ifname + "' is not an interface name");
  }
  return core::Status::ok();
}

core::Result<json> PacketLoss::capture(const Fault& fault) {
  FC_RETURN_IF_ERROR(checkTarget(fault));
  return json{{"backend", lossBackendName(backend_)}};
}

core::Status PacketLoss::apply(const Fault& fault) {
  FC_RETURN_IF_ERROR(checkTarget(fault));
  FC_RETURN_IF_ERROR(validate(fault.params));
  switch (backend_) {
    case LossBackend::kNetem:
      return applyNetem(fault);
    case LossBackend::kNftables:
      return applyNftables(fault);
    case LossBackend::kNone:
      break;
  }
  return core::Status(core::StatusCode::kNotSupported, "packet_loss is unavailable: " + reason_);
}

core::Status PacketLoss::applyNetem(const Fault& fault) {
  if (qdiscs_ == nullptr) return core::Status(core::StatusCode::kNotSupported, "no qdisc adapter");
  sys::NetemSpec spec;
  spec.loss_percent = numberOr(fault.params, "percent", 0);
  spec.loss_correlation = numberOr(fault.params, "correlation", 0);
  return qdiscs_->replaceRootNetem(fault.target.netns, fault.target.ifname, spec)
      .withContext("packet_loss apply on " + fault.target.ifname);
}

core::Status PacketLoss::applyNftables(const Fault& fault) {
  if (nftables_ == nullptr) {
    return core::Status(core::StatusCode::kNotSupported, "no nftables adapter");
  }
  const std::string context = "packet_loss apply on " + fault.target.ifname;
  // Re-applying replaces the previous table, so a changed percent takes effect.
  FC_RETURN_IF_ERROR(revertNftables(fault).withContext(context));
  for (const std::string& script :
       nftLossScripts(fault.target.ifname, numberOr(fault.params, "percent", 0),
                      hooksFor(directionOf(fault.params)))) {
    FC_RETURN_IF_ERROR(nftables_->run(fault.target.netns, script).withContext(context));
  }
  return core::Status::ok();
}

core::Status PacketLoss::revert(const Fault& fault, const json& prior) {
  FC_RETURN_IF_ERROR(checkTarget(fault));
  LossBackend backend = backend_;
  if (prior.is_object()) {
    auto it = prior.find("backend");
    if (it != prior.end() && *it == "netem") backend = LossBackend::kNetem;
    if (it != prior.end() && *it == "nftables") backend = LossBackend::kNftables;
  }
  switch (backend) {
    case LossBackend::kNetem:
      return revertNetem(fault);
    case LossBackend::kNftables:
      return revertNftables(fault);
    case LossBackend::kNone:
      break;
  }
  return core::Status::ok();  // nothing can have been applied
}

// Deleting the root qdisc gives the interface back the kernel's default; a device that is gone
// took its qdisc with it.
core::Status PacketLoss::revertNetem(const Fault& fault) {
  if (qdiscs_ == nullptr) return core::Status(core::StatusCode::kNotSupported, "no qdisc adapter");
  core::Status status = qdiscs_->deleteRoot(fault.target.netns, fault.target.ifname);
  if (status.code() == core::StatusCode::kNotFound) return core::Status::ok();
  return status.withContext("packet_loss revert on " + fault.target.ifname);
}

// kNotFound from listTable covers both "no table" and "no namespace": either way nothing of
// ours is left.
core::Status PacketLoss::revertNftables(const Fault& fault) {
  if (nftables_ == nullptr) {
    return core::Status(core::StatusCode::kNotSupported, "no nftables adapter");
  }
  const std::string table = nftLossTableName(fault.target.ifname);
  auto listing = nftables_->listTable(fault.target.netns, kFamily, table);
  if (listing.status().code() == core::StatusCode::kNotFound) return core::Status::ok();
  if (!listing.isOk()) {
    return listing.status().withContext("packet_loss revert on " + fault.target.ifname);
  }
  core::Status status =
      nftables_->run(fault.target.netns, std::string("delete table ") + kFamily + " " + table);
  if (status.code() == core::StatusCode::kNotFound) return core::Status::ok();
  return status.withContext("packet_loss revert on " + fault.target.ifname);
}

core::Result<json> PacketLoss::observe(const Fault& fault) {
  FC_RETURN_IF_ERROR(checkTarget(fault));
  const std::string context = "packet_loss observe on " + fault.target.ifname;
  if (backend_ == LossBackend::kNetem && qdiscs_ != nullptr) {
    auto root = qdiscs_->getRoot(fault.target.netns, fault.target.ifname);
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
  if (backend_ == LossBackend::kNftables && nftables_ != nullptr) {
    auto listing =
        nftables_->listTable(fault.target.netns, kFamily, nftLossTableName(fault.target.ifname));
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
  return core::Status(core::StatusCode::kNotSupported, "packet_loss is unavailable: " + reason_);
}

}  // namespace fabric_chaos::injectors
