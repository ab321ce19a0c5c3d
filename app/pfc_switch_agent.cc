#include "app/pfc_switch_agent.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "lab/frame_checksum.h"

namespace fabric_chaos::app {

PfcSwitchAgent::PfcSwitchAgent(lab::PfcSwitchModel& model, lab::PfcPausePropagation& propagation,
                               sys::PfcGate& gate,
                               std::vector<std::unique_ptr<sys::RawPacketSocket>> pfc_senders)
    : model_(model), propagation_(propagation), gate_(gate), pfc_senders_(std::move(pfc_senders)) {}

void PfcSwitchAgent::onPauseFrame(size_t port, const injectors::PfcPause& pause, int64_t now_ns) {
  apply(model_.onPauseFrame(port, pause, now_ns));
}

void PfcSwitchAgent::apply(const std::vector<lab::HoldChange>& changes) {
  for (const lab::HoldChange& change : changes) {
    report(gate_.holdUntil(model_.ports()[change.port].ifindex, change.priority, change.until_ns));
  }
}

void PfcSwitchAgent::settle(int64_t now_ns) {
  for (int round = 0; round < 16; ++round) {
    takeHeld();
    std::vector<lab::HoldChange> opened;
    std::vector<lab::Release> releases = model_.due(now_ns, opened);
    if (releases.empty() && opened.empty()) break;
    send(std::move(releases));
    apply(opened);
  }
  std::vector<uint8_t> enabled;
  for (const lab::PfcPortSpec& port : model_.ports()) enabled.push_back(port.pfc_enabled);
  sendPauses(propagation_.update(model_.queueLoads(), enabled, now_ns));
}

void PfcSwitchAgent::releaseEverything(int64_t now_ns) {
  for (const lab::PfcPortSpec& port : model_.ports()) {
    for (int p = 0; p < lab::kPfcPriorityCount; ++p) report(gate_.holdUntil(port.ifindex, p, 0));
  }
  settle(now_ns);
  send(model_.releaseAll());
  sendPauses(propagation_.releaseAll());
}

std::optional<int64_t> PfcSwitchAgent::nextDeadline() const {
  const std::optional<int64_t> model = model_.nextDeadline();
  const std::optional<int64_t> refresh = propagation_.nextDeadline();
  if (!model) return refresh;
  if (!refresh) return model;
  return std::min(*model, *refresh);
}

// Held frames back out of their ports, their transport checksums completed first.
void PfcSwitchAgent::send(std::vector<lab::Release> releases) {
  for (lab::Release& release : releases) {
    const int ifindex = model_.ports()[release.port].ifindex;
    for (std::vector<uint8_t>& frame : release.frames) {
      lab::completeTransportChecksum(frame);
      if (!gate_.send(ifindex, frame).isOk()) ++send_failures_;
    }
  }
}

void PfcSwitchAgent::sendPauses(const std::vector<lab::PfcPauseOut>& pauses) {
  for (const lab::PfcPauseOut& pause : pauses) {
    if (pause.port >= pfc_senders_.size() || !pfc_senders_[pause.port]) continue;
    sys::RawPacketSocket& socket = *pfc_senders_[pause.port];
    const auto frame = injectors::buildPfcFrame(
        socket.mac(),
        injectors::pfcPause(static_cast<uint8_t>(1u << pause.priority), pause.quanta));
    const core::Status sent = socket.send(frame.data(), frame.size());
    if (!sent.isOk()) {
      ++send_failures_;
      report(sent);
    }
  }
}

void PfcSwitchAgent::takeHeld() {
  auto held = gate_.takeHeld();
  if (!held.isOk()) {
    report(held.status());
    return;
  }
  for (sys::HeldFrame& frame : *held) {
    if (auto port = model_.portOf(frame.ifindex)) {
      model_.onHeld(*port, frame.priority, std::move(frame.bytes),
                    model_.portOf(frame.ingress_ifindex));
    }
  }
}

void PfcSwitchAgent::report(const core::Status& status) {
  if (status.isOk() || status.message() == last_error_) return;
  last_error_ = status.message();
  std::fprintf(stderr, "fabric-chaos pfc-switch: %s\n", status.toString().c_str());
}

}  // namespace fabric_chaos::app
