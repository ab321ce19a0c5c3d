// `fabric-chaos traffic sink|source` over TCP (the default transport), started as a long-running
// emitter by the incast and hot-spot faults (injectors/sys/emitters.h) or by hand. One thread, one
// ppoll loop: the sink accepts and drains every flow, the source keeps its flows connected
// (retrying every 100 ms) and writes, paced by a token bucket when a rate is given. Options,
// pacing and reports are pure (workload/traffic.h); sockets are workload/sys/traffic_sockets.h.

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "app/traffic_loop.h"
#include "core/clock.h"
#include "workload/sys/traffic_sockets.h"
#include "workload/traffic.h"

namespace fabric_chaos::app {
namespace {

using workload::SocketInterest;
using workload::TrafficOptions;
using workload::TrafficSocket;
using workload::Transfer;

constexpr int64_t kNsPerMs = kTrafficNsPerMs;
constexpr int64_t kConnectTimeoutNs = 1000 * kNsPerMs;  // a SYN unanswered this long is retried
constexpr size_t kSinkReadBytes = 256 << 10;
constexpr int kReadsPerWake = 8;   // per flow, so that one fast flow cannot starve the others
constexpr int kWritesPerWake = 8;  // per flow, so that reports stay on time

}  // namespace

int runTcpSink(const TrafficOptions& o, const sigset_t& wait_mask) {
  auto listening = TrafficSocket::listen(o.addr, o.port);
  if (!listening.isOk()) {
    std::fprintf(stderr, "fabric-chaos traffic sink: cannot listen: %s\n",
                 listening.status().message().c_str());
    return 1;
  }
  TrafficSocket listener = std::move(listening.value());
  const int64_t start_ns = core::steadyNowNs();
  TrafficSchedule schedule(o, start_ns);
  workload::SinkLedger ledger(start_ns);
  printReportLine(ledger.report(start_ns, false));

  struct Flow {
    int id;
    TrafficSocket socket;
  };
  std::vector<Flow> flows;
  std::vector<char> buffer(kSinkReadBytes);
  std::string last_accept_error;
  std::vector<SocketInterest> interests;
  int64_t now_ns = start_ns;
  while (!schedule.finished(now_ns)) {
    if (schedule.reportDue(now_ns)) printReportLine(ledger.report(now_ns, false));
    interests.assign(flows.size() + 1, SocketInterest{});
    interests[0].fd = listener.fd();
    interests[0].read = true;
    for (size_t i = 0; i < flows.size(); ++i) {
      interests[i + 1].fd = flows[i].socket.fd();
      interests[i + 1].read = true;
    }
    workload::waitForSockets(interests, schedule.nextWakeNs() - now_ns, &wait_mask);

    if (interests[0].readable || interests[0].failed) {
      for (int taken = 0; taken < 64; ++taken) {
        auto accepted = listener.accept();
        if (!accepted.isOk()) {
          if (accepted.status().message() != last_accept_error) {  // once per distinct error
            last_accept_error = accepted.status().message();
            std::fprintf(stderr, "fabric-chaos traffic sink: %s\n", last_accept_error.c_str());
          }
          break;
        }
        if (!accepted->has_value()) break;
        const int id = ledger.opened((*accepted)->peer);
        flows.push_back(Flow{id, std::move((*accepted)->socket)});
      }
    }
    for (size_t i = 0; i + 1 < interests.size(); ++i) {
      if (!interests[i + 1].readable && !interests[i + 1].failed) continue;
      Flow& flow = flows[i];
      for (int reads = 0; reads < kReadsPerWake; ++reads) {
        const Transfer got = flow.socket.read(buffer.data(), buffer.size());
        if (got.kind == Transfer::Kind::kMoved) {
          ledger.received(flow.id, got.bytes);
          if (static_cast<size_t>(got.bytes) < buffer.size()) break;  // drained for now
          continue;
        }
        if (got.kind != Transfer::Kind::kWouldBlock) {  // EOF or reset: the flow is over
          ledger.closed(flow.id);
          flow.socket.close();
        }
        break;
      }
    }
    flows.erase(
        std::remove_if(flows.begin(), flows.end(), [](const Flow& f) { return !f.socket.valid(); }),
        flows.end());
    now_ns = core::steadyNowNs();
  }
  printReportLine(ledger.report(core::steadyNowNs(), true));
  return 0;
}

int runTcpSource(const TrafficOptions& o, const sigset_t& wait_mask) {
  // Checked once, before any report: a missing one would fail every connection forever.
  if (!o.congestion_control.empty()) {
    if (core::Status s = TrafficSocket::checkCongestionControl(o.congestion_control); !s.isOk()) {
      std::fprintf(stderr, "fabric-chaos traffic: %s\n", s.message().c_str());
      return 1;
    }
  }
  const int64_t start_ns = core::steadyNowNs();
  TrafficSchedule schedule(o, start_ns);
  workload::SourceLedger ledger(o.flows, start_ns);
  printReportLine(ledger.report(start_ns, false));

  enum class State { kIdle, kConnecting, kConnected };
  struct Flow {
    State state = State::kIdle;
    TrafficSocket socket;
    int64_t next_attempt_ns = 0;
    int64_t connect_deadline_ns = 0;
    bool attempted = false;
    int64_t offset = 0;  // into the current message
  };
  std::vector<Flow> flows(static_cast<size_t>(o.flows));
  for (Flow& flow : flows) flow.next_attempt_ns = start_ns;
  const std::vector<char> message(static_cast<size_t>(o.message_bytes), '\x5a');
  std::optional<workload::TokenBucket> bucket;
  if (o.rate_mbps) bucket = workload::sourceBucket(*o.rate_mbps, start_ns);
  const int64_t min_write =
      o.rate_mbps ? workload::minPacedWrite(*o.rate_mbps, o.message_bytes) : o.message_bytes;
  // The flow after the last one that wrote goes first next time: paced, whoever goes first takes
  // the tokens, so this shares them round robin.
  size_t first_writer = 0;

  auto fail = [&](size_t i, const core::Status& why, int64_t now_ns) {
    Flow& flow = flows[i];
    flow.socket.close();
    flow.state = State::kIdle;
    flow.next_attempt_ns = now_ns + kTrafficRetryNs;
    flow.offset = 0;
    ledger.disconnected(static_cast<int>(i), why.message());
  };

  std::vector<SocketInterest> interests;
  std::vector<size_t> interest_flow;
  int64_t now_ns = start_ns;
  while (!schedule.finished(now_ns)) {
    if (schedule.reportDue(now_ns)) printReportLine(ledger.report(now_ns, false));

    // Connections: start the attempts that are due, give up on those that took too long.
    int64_t wake_ns = schedule.nextWakeNs();
    for (size_t i = 0; i < flows.size(); ++i) {
      Flow& flow = flows[i];
      if (flow.state == State::kIdle && now_ns >= flow.next_attempt_ns) {
        if (flow.attempted) ledger.retried();
        flow.attempted = true;
        const int source_port = o.source_ports.empty() ? 0 : o.source_ports[i];
        auto started =
            TrafficSocket::connect(o.addr, o.port, o.dscp, o.congestion_control, source_port);
        if (started.isOk()) {
          flow.socket = std::move(started.value());
          flow.state = State::kConnecting;
          flow.connect_deadline_ns = now_ns + kConnectTimeoutNs;
        } else {
          fail(i, started.status(), now_ns);
        }
      } else if (flow.state == State::kConnecting && now_ns >= flow.connect_deadline_ns) {
        fail(i, core::Status(core::StatusCode::kTimeout, "connect: no answer within 1 s"), now_ns);
      }
      if (flow.state == State::kIdle) wake_ns = std::min(wake_ns, flow.next_attempt_ns);
      if (flow.state == State::kConnecting) wake_ns = std::min(wake_ns, flow.connect_deadline_ns);
    }

    // Paced: ask for room to write only when the bucket holds a write's worth, else wake then.
    bool may_write = true;
    if (bucket) {
      bucket->available(now_ns);
      const int64_t ready_ns = bucket->readyAt(min_write);
      if (ready_ns > now_ns) {
        may_write = false;
        wake_ns = std::min(wake_ns, ready_ns);
      }
    }
    interests.clear();
    interest_flow.clear();
    for (size_t i = 0; i < flows.size(); ++i) {
      const Flow& flow = flows[i];
      if (flow.state == State::kIdle) continue;
      SocketInterest interest;
      interest.fd = flow.socket.fd();
      interest.write = flow.state == State::kConnecting || may_write;
      interest.read = flow.state == State::kConnected;  // the sink's FIN or reset
      interests.push_back(interest);
      interest_flow.push_back(i);
    }
    workload::waitForSockets(interests, wake_ns - now_ns, &wait_mask);
    now_ns = core::steadyNowNs();

    std::vector<bool> writable(flows.size(), false);
    for (size_t k = 0; k < interests.size(); ++k) {
      const size_t i = interest_flow[k];
      Flow& flow = flows[i];
      const SocketInterest& ready = interests[k];
      if (flow.state == State::kConnecting) {
        if (!ready.writable && !ready.failed) continue;
        const core::Status outcome = flow.socket.connectOutcome();
        if (outcome.isOk()) {
          flow.state = State::kConnected;
          ledger.connected(static_cast<int>(i));
        } else {
          fail(i, outcome, now_ns);
        }
        continue;
      }
      if (ready.readable || ready.failed) {
        char discard[4096];
        const Transfer got = flow.socket.read(discard, sizeof(discard));
        if (got.kind == Transfer::Kind::kClosed) {
          fail(i, core::Status(core::StatusCode::kUnavailable, "the sink closed the connection"),
               now_ns);
          continue;
        }
        if (got.kind == Transfer::Kind::kFailed) {
          fail(i, got.error, now_ns);
          continue;
        }
      }
      writable[i] = ready.writable;
    }

    size_t next_first_writer = first_writer;
    for (size_t n = 0; n < flows.size(); ++n) {
      const size_t i = (first_writer + n) % flows.size();
      Flow& flow = flows[i];
      if (!writable[i] || flow.state != State::kConnected) continue;
      for (int writes = 0; writes < kWritesPerWake; ++writes) {
        int64_t size = o.message_bytes - flow.offset;
        if (bucket) {
          const int64_t tokens = bucket->available(now_ns);
          if (tokens < std::min(min_write, size)) break;
          size = std::min(size, tokens);
        }
        const Transfer put =
            flow.socket.write(message.data() + flow.offset, static_cast<size_t>(size));
        if (put.kind == Transfer::Kind::kFailed) {
          fail(i, put.error, now_ns);
          break;
        }
        if (put.kind != Transfer::Kind::kMoved) break;
        ledger.sent(static_cast<int>(i), put.bytes);
        if (bucket) bucket->consume(put.bytes);
        flow.offset = (flow.offset + put.bytes) % o.message_bytes;
        next_first_writer = (i + 1) % flows.size();
        if (put.bytes < size) break;  // the socket buffer is full
      }
    }
    first_writer = next_first_writer;
  }
  printReportLine(ledger.report(core::steadyNowNs(), true));
  return 0;
}

}  // namespace fabric_chaos::app
