// `fabric-chaos traffic sink|source --transport verbs`: the traffic generator over RC QPs
// (workload/sys/verbs_traffic.h). The same reports, retries and pacing as over TCP
// (app/tcp_traffic.cc): the sink counts what each flow wrote, the source keeps its flows
// connected (retrying every 100 ms) and its writes in flight, paced by a token bucket when a rate
// is given. One thread, one ppoll loop over the rdma_cm channel and the flows' completion
// channels.

#include "workload/sys/verbs_traffic.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "app/traffic_loop.h"
#include "core/clock.h"
#include "workload/traffic.h"

namespace fabric_chaos::app {
namespace {

using Event = workload::VerbsTrafficEvent;
using workload::TrafficOptions;

// An attempt not established in this long is abandoned and retried: the CM's own retries take
// much longer against a sink that is not there.
constexpr int64_t kConnectTimeoutNs = 3000 * kTrafficNsPerMs;

}  // namespace

int runVerbsSink(const TrafficOptions& o, const sigset_t& wait_mask) {
  auto listening = workload::VerbsTrafficSink::listen(
      o.addr, o.port, static_cast<uint32_t>(workload::kMaxMessageBytes));
  if (!listening.isOk()) {
    std::fprintf(stderr, "fabric-chaos traffic sink: cannot listen: %s\n",
                 listening.status().message().c_str());
    return 1;
  }
  workload::VerbsTrafficSink& sink = **listening;
  const int64_t start_ns = core::steadyNowNs();
  TrafficSchedule schedule(o, start_ns);
  workload::SinkLedger ledger(start_ns);
  printReportLine(ledger.report(start_ns, false));
  std::vector<int> ledger_id;  // by the sink's flow index
  // Bytes of a flow whose ESTABLISHED event has not been seen yet: the source may write as soon
  // as its own side is up, and the sink can poll those completions first. Counted at kOpened.
  std::map<int, int64_t> early_bytes;
  auto idOf = [&](int flow) -> int {
    if (flow < 0 || static_cast<size_t>(flow) >= ledger_id.size()) return -1;
    return ledger_id[static_cast<size_t>(flow)];
  };
  auto apply = [&](const std::vector<Event>& events) {
    for (const Event& e : events) {
      switch (e.kind) {
        case Event::Kind::kOpened: {
          if (ledger_id.size() <= static_cast<size_t>(e.flow)) ledger_id.resize(e.flow + 1, -1);
          const int id = ledger.opened(e.text);
          ledger_id[static_cast<size_t>(e.flow)] = id;
          if (auto early = early_bytes.find(e.flow); early != early_bytes.end()) {
            ledger.received(id, early->second);
            early_bytes.erase(early);
          }
          break;
        }
        case Event::Kind::kBytes:
          if (int id = idOf(e.flow); id >= 0) {
            ledger.received(id, e.bytes);
          } else {
            early_bytes[e.flow] += e.bytes;
          }
          break;
        case Event::Kind::kClosed:
          // A flow that closed before its ESTABLISHED event still delivered what it carried.
          if (auto early = early_bytes.find(e.flow);
              early != early_bytes.end() && idOf(e.flow) < 0) {
            if (ledger_id.size() <= static_cast<size_t>(e.flow)) ledger_id.resize(e.flow + 1, -1);
            ledger_id[static_cast<size_t>(e.flow)] = ledger.opened("(not established)");
            ledger.received(ledger_id[static_cast<size_t>(e.flow)], early->second);
          }
          early_bytes.erase(e.flow);
          if (int id = idOf(e.flow); id >= 0) {
            ledger.closed(id);
            ledger_id[static_cast<size_t>(e.flow)] = -1;
          } else {
            std::fprintf(stderr, "fabric-chaos traffic sink: %s\n", e.text.c_str());
          }
          break;
        case Event::Kind::kConnected:
        case Event::Kind::kFailed:
          break;  // a source's
      }
    }
  };
  std::vector<Event> events;
  int64_t now_ns = start_ns;
  while (!schedule.finished(now_ns)) {
    if (schedule.reportDue(now_ns)) printReportLine(ledger.report(now_ns, false));
    events.clear();
    if (core::Status s = sink.wait(schedule.nextWakeNs() - now_ns, &wait_mask, &events);
        !s.isOk()) {
      std::fprintf(stderr, "fabric-chaos traffic sink: %s\n", s.message().c_str());
      printReportLine(ledger.report(core::steadyNowNs(), true));
      return 1;
    }
    apply(events);
    now_ns = core::steadyNowNs();
  }
  // Stopped: what already completed is counted in the final report, without waiting for more.
  events.clear();
  if (sink.wait(0, &wait_mask, &events).isOk()) apply(events);
  printReportLine(ledger.report(core::steadyNowNs(), true));
  return 0;
}

int runVerbsSource(const TrafficOptions& o, const sigset_t& wait_mask) {
  workload::VerbsSourceOptions vo;
  vo.addr = o.addr;
  vo.port = o.port;
  vo.flows = o.flows;
  vo.dscp = o.dscp;
  vo.message_bytes = static_cast<uint32_t>(o.message_bytes);
  vo.depth = static_cast<uint32_t>(o.depth);
  auto created = workload::VerbsTrafficSource::create(vo);
  if (!created.isOk()) {
    std::fprintf(stderr, "fabric-chaos traffic source: %s\n", created.status().message().c_str());
    return 1;
  }
  workload::VerbsTrafficSource& source = **created;
  const int64_t start_ns = core::steadyNowNs();
  TrafficSchedule schedule(o, start_ns);
  workload::SourceLedger ledger(o.flows, start_ns);
  printReportLine(ledger.report(start_ns, false));

  struct Flow {
    int64_t next_attempt_ns = 0;
    int64_t connect_deadline_ns = 0;
    bool attempted = false;
  };
  std::vector<Flow> flows(static_cast<size_t>(o.flows));
  for (Flow& flow : flows) flow.next_attempt_ns = start_ns;
  std::optional<workload::TokenBucket> bucket;
  if (o.rate_mbps) bucket = workload::sourceBucket(*o.rate_mbps, start_ns);
  const int64_t min_write =
      o.rate_mbps ? workload::minPacedWrite(*o.rate_mbps, o.message_bytes) : o.message_bytes;
  size_t first_writer = 0;  // round robin over the flows, as the TCP source shares its tokens
  std::vector<Event> events;

  auto handle = [&](const Event& e, int64_t now_ns) {
    Flow& flow = flows[static_cast<size_t>(e.flow)];
    switch (e.kind) {
      case Event::Kind::kConnected:
        ledger.connected(e.flow);
        break;
      case Event::Kind::kBytes:
        ledger.sent(e.flow, e.bytes);
        break;
      case Event::Kind::kFailed:
        ledger.disconnected(e.flow, e.text);
        flow.next_attempt_ns = now_ns + kTrafficRetryNs;
        break;
      case Event::Kind::kOpened:
      case Event::Kind::kClosed:
        break;  // a sink's
    }
  };

  int64_t now_ns = start_ns;
  while (!schedule.finished(now_ns)) {
    if (schedule.reportDue(now_ns)) printReportLine(ledger.report(now_ns, false));
    events.clear();
    int64_t wake_ns = schedule.nextWakeNs();
    for (size_t i = 0; i < flows.size(); ++i) {
      Flow& flow = flows[i];
      const int index = static_cast<int>(i);
      if (source.idle(index) && now_ns >= flow.next_attempt_ns) {
        if (flow.attempted) ledger.retried();
        flow.attempted = true;
        if (core::Status s = source.connect(index); s.isOk()) {
          flow.connect_deadline_ns = now_ns + kConnectTimeoutNs;
        } else {
          ledger.disconnected(index, s.message());
          flow.next_attempt_ns = now_ns + kTrafficRetryNs;
        }
      } else if (!source.idle(index) && !source.established(index) &&
                 now_ns >= flow.connect_deadline_ns) {
        source.reset(index);
        ledger.disconnected(index, "connect: not established within 3 s");
        flow.next_attempt_ns = now_ns + kTrafficRetryNs;
      }
      if (source.idle(index)) wake_ns = std::min(wake_ns, flow.next_attempt_ns);
      if (!source.idle(index) && !source.established(index)) {
        wake_ns = std::min(wake_ns, flow.connect_deadline_ns);
      }
    }

    // Writes: fill every flow's window, round robin, as far as the tokens go.
    size_t next_first_writer = first_writer;
    bool starved = false;
    for (size_t n = 0; n < flows.size() && !starved; ++n) {
      const int index = static_cast<int>((first_writer + n) % flows.size());
      while (source.room(index) > 0) {
        int64_t size = o.message_bytes;
        if (bucket) {
          const int64_t tokens = bucket->available(now_ns);
          if (tokens < std::min(min_write, size)) {
            starved = true;
            break;
          }
          size = std::min(size, tokens);
          bucket->consume(size);
        }
        source.post(index, static_cast<uint32_t>(size), &events);
        next_first_writer = (static_cast<size_t>(index) + 1) % flows.size();
      }
    }
    first_writer = next_first_writer;
    if (starved) wake_ns = std::min(wake_ns, bucket->readyAt(min_write));

    for (const Event& e : events) handle(e, now_ns);
    events.clear();
    if (core::Status s = source.wait(wake_ns - now_ns, &wait_mask, &events); !s.isOk()) {
      std::fprintf(stderr, "fabric-chaos traffic source: %s\n", s.message().c_str());
      printReportLine(ledger.report(core::steadyNowNs(), true));
      return 1;
    }
    now_ns = core::steadyNowNs();
    for (const Event& e : events) handle(e, now_ns);
  }
  printReportLine(ledger.report(core::steadyNowNs(), true));
  return 0;
}

}  // namespace fabric_chaos::app
