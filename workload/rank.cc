#include "workload/rank.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cerrno>
#include <limits>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "core/clock.h"
#include "core/command_line.h"
#include "workload/report.h"
#include "workload/ring.h"
#include "workload/sys/tcp_ring.h"
#include "workload/sys/verbs_ring.h"
#include "workload/traffic.h"

namespace fabric_chaos::workload {
namespace {

using core::Result;
using core::Status;
using core::StatusCode;
using nlohmann::json;

constexpr int64_t kNsPerMs = 1'000'000;
constexpr int64_t kMaxBytes = int64_t{1} << 30;
constexpr int kMaxWorld = 65536;
constexpr size_t kMaxSamplesPerLine = 1000;

Status invalid(const std::string& message) { return Status(StatusCode::kInvalidArgument, message); }

// "262144", "256K", "1M", "1G" (binary multiples).
Result<int64_t> parseBytes(const std::string& flag, const std::string& text) {
  std::string digits = text;
  int64_t scale = 1;
  if (!digits.empty()) {
    switch (digits.back()) {
      case 'k':
      case 'K':
        scale = int64_t{1} << 10;
        break;
      case 'm':
      case 'M':
        scale = int64_t{1} << 20;
        break;
      case 'g':
      case 'G':
        scale = int64_t{1} << 30;
        break;
      default:
        break;
    }
    if (scale != 1) digits.pop_back();
  }
  auto number = core::parseFlagInteger(flag, digits, 0, kMaxBytes / scale);
  if (!number.isOk()) {
    return invalid(flag + " expects a size such as 262144, 256K or 1M (at most 1G), got \"" + text +
                   "\"");
  }
  return *number * scale;
}

bool isNumericAddress(const std::string& addr) {
  unsigned char buf[sizeof(in6_addr)];
  return ::inet_pton(AF_INET, addr.c_str(), buf) == 1 ||
         ::inet_pton(AF_INET6, addr.c_str(), buf) == 1;
}

// Maps a link failure to the short reason reported in the peer_lost event.
std::string failureReason(const Status& status) {
  if (status.code() == StatusCode::kTimeout || status.origin() == ETIMEDOUT) return "timeout";
  if (status.code() == StatusCode::kAborted) return "aborted";
  if (status.origin() == ECONNRESET) return "connection_reset";
  if (status.origin() == EPIPE) return "broken_pipe";
  if (status.code() == StatusCode::kUnavailable && status.origin() == 0) return "eof";
  return "error";
}

double toMs(int64_t ns) { return static_cast<double>(ns) / static_cast<double>(kNsPerMs); }

// Writes report lines; samples are batched and flushed every flush_interval (and before any other
// line, so that the stream stays in time order). Every line is flushed so that the agent sees it
// at once.
class Reporter {
 public:
  Reporter(std::ostream& out, int rank, int64_t flush_interval_ns)
      : out_(out), rank_(rank), flush_interval_ns_(flush_interval_ns) {}

  bool healthy() const { return static_cast<bool>(out_); }

  void ready() {
    write(encodeReady(rank_, core::steadyNowNs()));
    last_flush_ns_ = core::steadyNowNs();
  }
  void sample(const RawSample& s) {
    pending_.push_back(s);
    if (pending_.size() >= kMaxSamplesPerLine ||
        s.start_ns + s.duration_ns - last_flush_ns_ >= flush_interval_ns_) {
      flush();
    }
  }
  void flush() {
    last_flush_ns_ = core::steadyNowNs();
    if (pending_.empty()) return;
    write(encodeSamples(rank_, pending_));
    pending_.clear();
  }
  // t_ns: when it happened (detection, reconnection), not when the line is written.
  void event(const char* kind, const json& detail, int64_t t_ns = core::steadyNowNs()) {
    flush();
    write(encodeEvent(rank_, t_ns, kind, detail));
  }
  void done(int64_t iterations) {
    flush();
    write(encodeDone(rank_, core::steadyNowNs(), iterations));
  }

 private:
  void write(const std::string& line) { out_ << line << '\n' << std::flush; }

  std::ostream& out_;
  int rank_;
  int64_t flush_interval_ns_;
  int64_t last_flush_ns_ = 0;
  std::vector<RawSample> pending_;
};

// Simulated compute: sleeps in slices so that stop is noticed within 50 ms. False on stop.
bool computePhase(int64_t compute_ms, const std::atomic<bool>& stop) {
  const int64_t until = core::steadyNowNs() + compute_ms * kNsPerMs;
  while (true) {
    if (stop.load(std::memory_order_relaxed)) return false;
    const int64_t left = until - core::steadyNowNs();
    if (left <= 0) return true;
    std::this_thread::sleep_for(std::chrono::nanoseconds(std::min<int64_t>(left, 50 * kNsPerMs)));
  }
}

// The ring transport under the rank loop: TCP sockets or verbs RC QPs. Both fail the same way
// (a Status from sendRecv, then disconnect and form again), so the loop below and the report
// stream are the same for both; only the peer_lost detail differs (verbs adds wc_status and
// cm_event).
class Transport {
 public:
  virtual ~Transport() = default;
  virtual RingLink* link() = 0;
  virtual Result<uint32_t> form(uint32_t epoch, int64_t deadline_ns) = 0;
  virtual void disconnect() = 0;
  // Fills the transport's fields of a peer_lost event: "reason", and for verbs "wc_status" and
  // "cm_event" when there is one.
  virtual void describeFailure(const Status& status, json* detail) = 0;
};

class TcpTransport : public Transport {
 public:
  explicit TcpTransport(std::unique_ptr<TcpRing> ring) : ring_(std::move(ring)) {}
  RingLink* link() override { return ring_.get(); }
  Result<uint32_t> form(uint32_t epoch, int64_t deadline_ns) override {
    return ring_->form(epoch, deadline_ns);
  }
  void disconnect() override { ring_->disconnect(); }
  void describeFailure(const Status& status, json* detail) override {
    (*detail)["reason"] = failureReason(status);
  }

 private:
  std::unique_ptr<TcpRing> ring_;
};

class VerbsTransport : public Transport {
 public:
  explicit VerbsTransport(std::unique_ptr<VerbsRing> ring) : ring_(std::move(ring)) {}
  RingLink* link() override { return ring_.get(); }
  Result<uint32_t> form(uint32_t epoch, int64_t deadline_ns) override {
    return ring_->form(epoch, deadline_ns);
  }
  void disconnect() override { ring_->disconnect(); }
  void describeFailure(const Status& status, json* detail) override {
    const LinkFailure& failure = ring_->lastFailure();
    (*detail)["reason"] = failure.reason.empty() ? failureReason(status) : failure.reason;
    if (!failure.wc_status.empty()) (*detail)["wc_status"] = failure.wc_status;
    if (!failure.cm_event.empty()) (*detail)["cm_event"] = failure.cm_event;
  }

 private:
  std::unique_ptr<VerbsRing> ring_;
};

// Listens on --listen with the chosen transport.
Result<std::unique_ptr<Transport>> listenTransport(const RankOptions& options,
                                                   const std::atomic<bool>& stop,
                                                   const RankHooks& hooks) {
  if (options.transport == "verbs") {
    VerbsRingOptions verbs;
    verbs.rank = options.rank;
    verbs.world = options.world;
    verbs.listen_addr = options.listen_addr;
    verbs.listen_port = options.listen_port;
    verbs.next_addr = options.next_addr;
    verbs.next_port = options.next_port;
    verbs.peer_timeout_ms = options.peer_timeout_ms;
    verbs.dscp = options.dscp;
    // One ring step is one message: the largest chunk (the first) fits one slot.
    const auto count = static_cast<size_t>(options.message_bytes / 4);
    verbs.slot_bytes = ringChunk(count, options.world, 0).count * sizeof(float);
    verbs.stop = &stop;
    verbs.abort_connections = hooks.abort_connections;
    auto listening = VerbsRing::listen(verbs);
    if (!listening.isOk()) return listening.status();
    return std::unique_ptr<Transport>(
        std::make_unique<VerbsTransport>(std::move(listening.value())));
  }
  TcpRingOptions tcp;
  tcp.rank = options.rank;
  tcp.world = options.world;
  tcp.listen_addr = options.listen_addr;
  tcp.listen_port = options.listen_port;
  tcp.next_addr = options.next_addr;
  tcp.next_port = options.next_port;
  tcp.peer_timeout_ms = options.peer_timeout_ms;
  tcp.dscp = options.dscp;
  tcp.stop = &stop;
  tcp.abort_connections = hooks.abort_connections;
  auto listening = TcpRing::listen(tcp);
  if (!listening.isOk()) return listening.status();
  return std::unique_ptr<Transport>(std::make_unique<TcpTransport>(std::move(listening.value())));
}

}  // namespace

std::string rankUsage() {
  return "usage: fabric-chaos workload --rank N --world N [options]\n"
         "  One rank of a ring allreduce (float32 sum) over TCP or RDMA verbs, timed per\n"
         "  iteration; report lines (JSON) go to stdout.\n"
         "  --rank N                  this rank, 0 <= N < world (required)\n"
         "  --world N                 number of ranks in the ring (required)\n"
         "  --listen ADDR:PORT        where this rank accepts its previous rank (world > 1)\n"
         "  --next ADDR:PORT          where rank (rank+1) % world listens (world > 1)\n"
         "  --bytes N[K|M|G]          allreduce message size, a multiple of 4 and at least\n"
         "                            4 * world (default 1M)\n"
         "  --compute-ms N            simulated compute before each allreduce (default 5)\n"
         "  --peer-timeout-ms N       a peer that moves no byte this long is lost (default 10000)\n"
         "  --reconnect-budget-ms N   give up re-forming the ring after this long (default 30000)\n"
         "  --duration-s N            stop after this long (default 600)\n"
         "  --flush-ms N              how often samples are written out (default 100)\n"
         "  --transport tcp|verbs     (default tcp; verbs runs over RC QPs and needs an RDMA\n"
         "                            device, e.g. Soft-RoCE: rdma link add rxe0 type rxe ...)\n"
         "  --dscp D                  IPv4 DSCP of the ring's packets, 0-63 (default 0; 26 is\n"
         "                            RoCE's lossless class on a lab switch)\n"
         "  Addresses are numeric IPv4 or IPv6 ([::1]:5000); names are not resolved.\n";
}

Status validateRankOptions(const RankOptions& o) {
  if (o.transport != "tcp" && o.transport != "verbs") {
    return invalid("--transport must be tcp or verbs, got " + o.transport);
  }
  if (o.world < 1 || o.world > kMaxWorld) {
    return invalid("--world must be between 1 and " + std::to_string(kMaxWorld));
  }
  if (o.rank < 0 || o.rank >= o.world) {
    return invalid("--rank must be at least 0 and less than --world (" + std::to_string(o.world) +
                   "), got " + std::to_string(o.rank));
  }
  if (o.message_bytes < 4 * static_cast<int64_t>(o.world)) {
    return invalid("--bytes must be at least 4 * world = " + std::to_string(4 * o.world) +
                   " (one float32 per rank), got " + std::to_string(o.message_bytes));
  }
  if (o.message_bytes % 4 != 0) {
    return invalid("--bytes must be a multiple of 4 (float32 elements), got " +
                   std::to_string(o.message_bytes));
  }
  if (o.message_bytes > kMaxBytes) return invalid("--bytes must be at most 1G");
  if (o.compute_ms < 0) return invalid("--compute-ms must not be negative");
  if (o.peer_timeout_ms < 1) return invalid("--peer-timeout-ms must be positive");
  if (o.reconnect_budget_ms < 1) return invalid("--reconnect-budget-ms must be positive");
  if (o.max_duration_ms < 1) return invalid("--duration-s must be positive");
  if (o.flush_interval_ms < 1) return invalid("--flush-ms must be positive");
  if (o.world > 1) {
    if (!isNumericAddress(o.listen_addr)) {
      return invalid("--listen expects a numeric IP address, got \"" + o.listen_addr + "\"");
    }
    if (!isNumericAddress(o.next_addr)) {
      return invalid("--next expects a numeric IP address, got \"" + o.next_addr + "\"");
    }
    if (o.listen_port < 0 || o.listen_port > 65535) return invalid("--listen port out of range");
    if (o.next_port < 1 || o.next_port > 65535) return invalid("--next port out of range");
  }
  return Status::ok();
}

Result<RankOptions> parseRankArgs(int argc, char** argv) {
  RankOptions o;
  bool have_rank = false;
  bool have_world = false;
  bool have_listen = false;
  bool have_next = false;
  const core::FlagRules rules{
      {"rank", "world", "listen", "next", "bytes", "compute-ms", "peer-timeout-ms",
       "reconnect-budget-ms", "duration-s", "flush-ms", "transport", "dscp"},
      {}};
  auto line = core::parseCommandLine(core::commandLineArgs(argc, argv, 1), rules);
  if (!line.isOk()) return line.status();
  for (const core::ParsedFlag& parsed : line->flags) {
    const std::string flag = "--" + parsed.name;
    const std::string& value = parsed.value;
    auto number = [&](int64_t min, int64_t max) {
      return core::parseFlagInteger(flag, value, min, max);
    };
    if (flag == "--rank" || flag == "--world") {
      auto n = number(flag == "--rank" ? 0 : 1, flag == "--rank" ? kMaxWorld - 1 : kMaxWorld);
      if (!n.isOk()) return n.status();
      (flag == "--rank" ? o.rank : o.world) = static_cast<int>(*n);
      (flag == "--rank" ? have_rank : have_world) = true;
    } else if (flag == "--listen") {
      FC_RETURN_IF_ERROR(parseAddressPort(flag, value, &o.listen_addr, &o.listen_port));
      have_listen = true;
    } else if (flag == "--next") {
      FC_RETURN_IF_ERROR(parseAddressPort(flag, value, &o.next_addr, &o.next_port));
      have_next = true;
    } else if (flag == "--bytes") {
      auto n = parseBytes(flag, value);
      if (!n.isOk()) return n.status();
      o.message_bytes = *n;
    } else if (flag == "--transport") {
      o.transport = value;
    } else if (flag == "--dscp") {
      auto n = number(0, 63);
      if (!n.isOk()) return n.status();
      o.dscp = static_cast<int>(*n);
    } else {
      constexpr int64_t kDay = 86'400'000;
      auto n = flag == "--compute-ms"   ? number(0, kDay)
               : flag == "--duration-s" ? number(1, kDay / 1000)
                                        : number(1, kDay);
      if (!n.isOk()) return n.status();
      if (flag == "--compute-ms") o.compute_ms = *n;
      if (flag == "--peer-timeout-ms") o.peer_timeout_ms = *n;
      if (flag == "--reconnect-budget-ms") o.reconnect_budget_ms = *n;
      if (flag == "--duration-s") o.max_duration_ms = *n * 1000;
      if (flag == "--flush-ms") o.flush_interval_ms = *n;
    }
  }
  if (!have_rank) return invalid("--rank is required");
  if (!have_world) return invalid("--world is required");
  if (o.world > 1 && !have_listen) return invalid("--listen is required when --world > 1");
  if (o.world > 1 && !have_next) return invalid("--next is required when --world > 1");
  FC_RETURN_IF_ERROR(validateRankOptions(o));
  return o;
}

int runRank(const RankOptions& options, std::ostream& out, const std::atomic<bool>& stop) {
  return runRank(options, out, stop, RankHooks{});
}

int runRank(const RankOptions& options, std::ostream& out, const std::atomic<bool>& stop,
            const RankHooks& hooks) {
  Reporter report(out, options.rank, options.flush_interval_ms * kNsPerMs);
  if (Status valid = validateRankOptions(options); !valid.isOk()) {
    report.event(kEventRankError,
                 {{"reason", "invalid_options"}, {"message", valid.toString()}, {"iteration", 0}});
    report.done(0);
    return 2;
  }
  const int64_t run_end_ns = core::steadyNowNs() + options.max_duration_ms * kNsPerMs;
  const int64_t budget_ns = options.reconnect_budget_ms * kNsPerMs;

  // Small integers keep every partial sum exact, whatever order the ring adds them in.
  const auto count = static_cast<size_t>(options.message_bytes / 4);
  std::vector<float> input(count);
  std::vector<float> output(count);
  for (size_t i = 0; i < count; ++i) input[i] = static_cast<float>((i + options.rank) % 16);
  RingAllreduce allreduce(options.rank, options.world, count);

  std::unique_ptr<Transport> ring;
  uint32_t epoch = 1;
  if (options.world > 1) {
    auto listening = listenTransport(options, stop, hooks);
    if (!listening.isOk()) {
      report.event(kEventRankError, {{"reason", "listen_failed"},
                                     {"message", listening.status().toString()},
                                     {"iteration", 0}});
      report.done(0);
      return 1;
    }
    ring = std::move(listening.value());
    auto formed = ring->form(epoch, core::steadyNowNs() + budget_ns);
    if (!formed.isOk()) {
      if (stop.load()) {
        report.done(0);
        return 0;
      }
      report.event(kEventRankError, {{"reason", "ring_not_formed"},
                                     {"message", formed.status().toString()},
                                     {"iteration", 0}});
      report.done(0);
      return 1;
    }
    epoch = *formed;
  }
  report.ready();

  int64_t iteration = 0;
  bool restart = false;  // the previous attempt at this iteration was interrupted
  while (!stop.load() && core::steadyNowNs() < run_end_ns && report.healthy()) {
    if (!restart) {
      if (hooks.before_iteration) hooks.before_iteration(iteration);
      if (!computePhase(options.compute_ms, stop)) break;
    }
    const int64_t t0 = core::steadyNowNs();
    Status status = allreduce.run(input.data(), output.data(), ring ? ring->link() : nullptr);
    const int64_t t1 = core::steadyNowNs();
    if (status.isOk()) {
      report.sample({iteration, t0, t1 - t0, options.message_bytes});
      ++iteration;
      restart = false;
      continue;
    }
    if (stop.load()) break;

    // The ring is broken: drop both connections so that the neighbours notice too, re-form it
    // and restart this iteration. Its partial time is reported as a stall, not as a sample.
    json lost = {{"message", status.toString()}, {"iteration", iteration}, {"epoch", epoch}};
    ring->describeFailure(status, &lost);
    report.event(kEventPeerLost, lost, t1);
    ring->disconnect();
    const int64_t give_up_ns = t1 + budget_ns;
    auto formed = ring->form(epoch + 1, std::min(give_up_ns, run_end_ns));
    if (!formed.isOk()) {
      if (stop.load()) break;
      if (core::steadyNowNs() >= run_end_ns && give_up_ns > run_end_ns) break;  // run is over
      report.event(kEventRankError, {{"reason", "reconnect_budget_exhausted"},
                                     {"message", formed.status().toString()},
                                     {"iteration", iteration},
                                     {"budget_ms", options.reconnect_budget_ms}});
      report.done(iteration);
      return 1;
    }
    epoch = *formed;
    const int64_t back = core::steadyNowNs();
    report.event(kEventReconnected, {{"after_ms", toMs(back - t1)}, {"epoch", epoch}}, back);
    report.event(kEventStall,
                 {{"iteration", iteration}, {"start_ns", t0}, {"duration_ms", toMs(back - t0)}},
                 back);
    restart = true;
  }
  report.done(iteration);
  return report.healthy() ? 0 : 1;
}

}  // namespace fabric_chaos::workload
