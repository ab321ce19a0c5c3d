#pragma once
// The traffic generator's pure half (`fabric-chaos traffic sink|source`, the incast and hot-spot
// faults' aggressor): its command line, the token bucket that paces --rate-mbps across flows, and
// the per-flow byte counters that become one JSON report line per --report-ms. The sockets live in
// workload/sys/traffic_sockets.h and the loop in app/traffic_cmd.cc. Errors are kInvalidArgument
// naming the flag. Pure and single-threaded; times are CLOCK_MONOTONIC nanoseconds given by the
// caller, so tests drive them by hand.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace fabric_chaos::workload {

enum class TrafficRole { kSink, kSource };
// tcp: sockets (workload/sys/traffic_sockets.h); verbs: RC QPs streaming RDMA WRITE WITH IMMEDIATE
// (workload/sys/verbs_traffic.h), over an RDMA device that carries the address.
enum class TrafficTransport { kTcp, kVerbs };
std::string_view transportName(TrafficTransport transport);
std::optional<TrafficTransport> parseTransport(std::string_view name);

inline constexpr int kMaxTrafficFlows = 64;
inline constexpr int64_t kMinMessageBytes = 1024;
inline constexpr int64_t kMaxMessageBytes = 16 << 20;
// 128 KiB, iperf3's TCP write size: large enough that one write() per wake-up keeps a 100 Gbit/s
// socket busy, small enough that a paced flow's writes stay fine-grained.
inline constexpr int64_t kDefaultMessageBytes = 128 << 10;
inline constexpr int64_t kMaxRateMbps = 400'000;
inline constexpr int64_t kMaxTrafficDurationS = 7 * 86'400;
inline constexpr int kDefaultVerbsDepth = 16;
inline constexpr int kMaxVerbsDepth = 128;

struct TrafficOptions {
  TrafficRole role = TrafficRole::kSink;
  TrafficTransport transport = TrafficTransport::kTcp;
  std::string addr;  // sink: --listen; source: --connect (numeric IPv4 or IPv6)
  int port = 0;
  int flows = 1;                                 // source only
  int64_t message_bytes = kDefaultMessageBytes;  // source only: the size of one write
  std::optional<int64_t> rate_mbps;              // source only: total over all flows; none = TCP's
  int dscp = 0;                                  // source only: IP_TOS = dscp << 2
  // Source only: TCP_CONGESTION of every flow ("cubic", "reno", ...); "" = the host's default.
  std::string congestion_control;
  // Source only: flow i binds local port source_ports[i] (one per flow), so that the five-tuple,
  // and with it the spine an ECMP switch hashes the flow onto, is chosen (the hot_spot fault
  // picks ports by asking the switch's FIB). Empty: ephemeral ports.
  std::vector<int> source_ports;
  // Source, verbs only: RDMA writes in flight per flow (perftest's --tx-depth).
  int depth = kDefaultVerbsDepth;
  int64_t report_ms = 100;
  std::optional<int64_t> duration_s;  // none: until SIGTERM/SIGINT
};

// args are the words after `traffic`: the role, then its flags. `--help` is looked for by
// trafficWantsHelp() first; here it is an ordinary boolean and ignored.
core::Result<TrafficOptions> parseTrafficArgs(const std::vector<std::string>& args);
bool trafficWantsHelp(const std::vector<std::string>& args);
std::string trafficUsage();

// "10.0.0.1:7000", "[fd00::1]:7000" -> address and port (1..65535). kInvalidArgument naming
// `flag` unless the address is numeric IPv4 or IPv6.
core::Status parseAddressPort(const std::string& flag, const std::string& text, std::string* addr,
                              int* port);

// A token bucket in bytes: `rate` bytes per second, holding at most `burst` bytes, full at
// creation. Integer arithmetic on nanoseconds, with the fraction of a byte carried over, so that
// long runs neither drift nor round away small rates.
class TokenBucket {
 public:
  TokenBucket(int64_t rate_bytes_per_s, int64_t burst_bytes, int64_t now_ns);

  // Refills up to now_ns and returns the bytes that may be sent now.
  int64_t available(int64_t now_ns);
  // Takes `bytes` (at most what available() returned).
  void consume(int64_t bytes);
  // When `bytes` (at most the burst) will be available, given the refill up to the last
  // available() call; at or before now when they already are.
  int64_t readyAt(int64_t bytes) const;

  int64_t burst() const { return burst_; }

 private:
  int64_t rate_;
  int64_t burst_;
  int64_t tokens_;
  int64_t last_ns_;
  int64_t carry_;  // byte-nanoseconds not yet worth a whole byte (rate * ns mod 1e9)
};

// The pacing of a source with --rate-mbps: a bucket of that rate whose burst is 10 ms of it, at
// least 32 KiB (a wake-up late by a few ms loses no rate, and 100 ms reports stay smooth); and
// the smallest write worth waking for (1 ms of the rate, between 1 KiB and the message size).
TokenBucket sourceBucket(int64_t rate_mbps, int64_t now_ns);
int64_t minPacedWrite(int64_t rate_mbps, int64_t message_bytes);

// Mbit/s of `bytes` moved in `ns`; 0 when ns <= 0.
double mbps(int64_t bytes, int64_t ns);

// The sink's counters: flows come (accepted connections) and go (EOF, reset); each report lists
// the flows open now and, once, those that closed since the last report, then forgets the latter.
class SinkLedger {
 public:
  explicit SinkLedger(int64_t start_ns) : start_ns_(start_ns), last_report_ns_(start_ns) {}
  // A new flow from `peer` ("10.0.0.2:41234"); returns its id.
  int opened(const std::string& peer);
  void received(int id, int64_t bytes);
  void closed(int id);
  int64_t totalBytes() const { return total_; }
  size_t flowCount() const { return flows_.size(); }

  // {"role":"sink","t_ms":..,"bytes":..,"mbps":..,"flows":[{"peer":..,"bytes":..,"mbps":..,
  //  "open":..}],"final":true}: mbps over the time since the previous report ("final" only on
  // the last line). Starts the next interval.
  std::string report(int64_t now_ns, bool final);

 private:
  struct Flow {
    std::string peer;
    int64_t bytes = 0;
    int64_t bytes_at_report = 0;
    bool open = true;
  };
  int64_t start_ns_;
  int64_t last_report_ns_;
  int64_t total_ = 0;
  int64_t total_at_report_ = 0;
  int next_id_ = 0;
  std::map<int, Flow> flows_;  // by id: in accept order
};

// The source's counters: a fixed set of flows 0..N-1, each connected or not, and the number of
// connection attempts made after a flow's first one (a refused, unreachable or lost connection
// is retried, and each retry counts).
class SourceLedger {
 public:
  SourceLedger(int flows, int64_t start_ns);
  void sent(int flow, int64_t bytes);
  // up: the flow's connection is established; down: it failed or was lost, with why.
  void connected(int flow);
  void disconnected(int flow, const std::string& error);
  void retried() { ++reconnects_; }
  int64_t totalBytes() const { return total_; }
  int64_t reconnects() const { return reconnects_; }
  int connectedFlows() const;

  // {"role":"source","t_ms":..,"bytes":..,"mbps":..,"connected":..,"reconnects":..,
  //  "flows":[{"flow":0,"bytes":..,"mbps":..,"connected":..,"error":".."}],"final":true}:
  // "error" (the last failure) only on a flow that is not connected and has failed.
  std::string report(int64_t now_ns, bool final);

 private:
  struct Flow {
    int64_t bytes = 0;
    int64_t bytes_at_report = 0;
    bool connected = false;
    std::string error;
  };
  int64_t start_ns_;
  int64_t last_report_ns_;
  int64_t total_ = 0;
  int64_t total_at_report_ = 0;
  int64_t reconnects_ = 0;
  std::vector<Flow> flows_;
};

}  // namespace fabric_chaos::workload
