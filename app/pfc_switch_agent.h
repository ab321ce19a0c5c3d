#pragma once
// The PFC agent's work between its loop's wake-ups (app/pfc_switch_cmd.cc): the switch model
// (lab/pfc_switch_model.h) and pause propagation (lab/pfc_propagation.h) wired to the PFC gate
// (held frames in, released frames out) and to one packet socket per port that sends the
// switch's own PFC frames past the port's queues.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "injectors/pfc/pfc_frame.h"
#include "injectors/sys/pfc_gate.h"
#include "injectors/sys/raw_packets.h"
#include "lab/pfc_propagation.h"
#include "lab/pfc_switch_model.h"

namespace fabric_chaos::app {

class PfcSwitchAgent {
 public:
  // pfc_senders: by the model's port index (PACKET_QDISC_BYPASS sockets).
  PfcSwitchAgent(lab::PfcSwitchModel& model, lab::PfcPausePropagation& propagation,
                 sys::PfcGate& gate,
                 std::vector<std::unique_ptr<sys::RawPacketSocket>> pfc_senders);

  // A PFC frame arrived on `port`.
  void onPauseFrame(size_t port, const injectors::PfcPause& pause, int64_t now_ns);
  // The gate changes the model asked for: a pause frame's, a settled pause's, a new setting's.
  void apply(const std::vector<lab::HoldChange>& changes);
  // Takes what the gate held, sends what is due and opens the gates of ended pauses, until
  // nothing the gate held waits behind an open gate; then sends the pauses propagation asks for.
  void settle(int64_t now_ns);
  // Nothing stays held or paused: every gate open, every queued frame sent, whatever its pause,
  // and an XON for every pause this switch put on its neighbours.
  void releaseEverything(int64_t now_ns);
  // When settle() next has work: a pause's end, a watchdog's, a propagated pause's refresh.
  std::optional<int64_t> nextDeadline() const;

  uint64_t sendFailures() const { return send_failures_; }

 private:
  void send(std::vector<lab::Release> releases);
  void sendPauses(const std::vector<lab::PfcPauseOut>& pauses);
  void takeHeld();
  void report(const core::Status& status);

  lab::PfcSwitchModel& model_;
  lab::PfcPausePropagation& propagation_;
  sys::PfcGate& gate_;
  std::vector<std::unique_ptr<sys::RawPacketSocket>> pfc_senders_;
  uint64_t send_failures_ = 0;
  std::string last_error_;
};

}  // namespace fabric_chaos::app
