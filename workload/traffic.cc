#include "workload/traffic.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "core/command_line.h"

namespace fabric_chaos::workload {
namespace {

using core::Result;
using core::Status;
using core::StatusCode;
using nlohmann::ordered_json;

constexpr int64_t kNsPerS = 1'000'000'000;
constexpr int64_t kNsPerMs = 1'000'000;
constexpr int64_t kBytesPerSPerMbps = 125'000;

Status invalid(const std::string& message) { return Status(StatusCode::kInvalidArgument, message); }

bool isNumericAddress(const std::string& addr) {
  unsigned char buf[sizeof(in6_addr)];
  return ::inet_pton(AF_INET, addr.c_str(), buf) == 1 ||
         ::inet_pton(AF_INET6, addr.c_str(), buf) == 1;
}

// Mbit/s rounded to 0.001, so that report lines stay short.
double roundedMbps(int64_t bytes, int64_t ns) { return std::round(mbps(bytes, ns) * 1000) / 1000; }

int64_t elapsedMs(int64_t start_ns, int64_t now_ns) { return (now_ns - start_ns) / kNsPerMs; }

}  // namespace

Status parseAddressPort(const std::string& flag, const std::string& text, std::string* addr,
                        int* port) {
  std::string host;
  std::string port_text;
  if (!text.empty() && text.front() == '[') {
    const auto close = text.find("]:");
    if (close == std::string::npos) {
      return invalid(flag + " expects [ADDR]:PORT, got \"" + text + "\"");
    }
    host = text.substr(1, close - 1);
    port_text = text.substr(close + 2);
  } else {
    const auto colon = text.rfind(':');
    if (colon == std::string::npos) {
      return invalid(flag + " expects ADDR:PORT, got \"" + text + "\"");
    }
    host = text.substr(0, colon);
    port_text = text.substr(colon + 1);
  }
  if (!isNumericAddress(host)) {
    return invalid(flag + " expects a numeric IPv4 or IPv6 address, got \"" + host + "\"");
  }
  auto number = core::parseFlagInteger(flag + " port", port_text, 1, 65535);
  if (!number.isOk()) return number.status();
  *addr = host;
  *port = static_cast<int>(*number);
  return Status::ok();
}

namespace {

// "20001,20007,20012": distinct ports 1-65535, at most kMaxTrafficFlows of them.
Result<std::vector<int>> parseSourcePorts(const std::string& flag, const std::string& text) {
  std::vector<int> ports;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    const std::string item =
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    auto port = core::parseFlagInteger(flag + " port", item, 1, 65535);
    if (!port.isOk()) return port.status();
    if (std::find(ports.begin(), ports.end(), *port) != ports.end()) {
      return invalid(flag + ": port " + item + " is listed twice; each flow needs its own");
    }
    ports.push_back(static_cast<int>(*port));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (ports.size() > static_cast<size_t>(kMaxTrafficFlows)) {
    return invalid(flag + ": " + std::to_string(ports.size()) + " ports; at most " +
                   std::to_string(kMaxTrafficFlows) + " flows");
  }
  return ports;
}

}  // namespace

std::string_view transportName(TrafficTransport transport) {
  return transport == TrafficTransport::kVerbs ? "verbs" : "tcp";
}

std::optional<TrafficTransport> parseTransport(std::string_view name) {
  if (name == "tcp") return TrafficTransport::kTcp;
  if (name == "verbs") return TrafficTransport::kVerbs;
  return std::nullopt;
}

bool trafficWantsHelp(const std::vector<std::string>& args) {
  return std::any_of(args.begin(), args.end(),
                     [](const std::string& a) { return a == "--help" || a == "-h"; });
}

Result<TrafficOptions> parseTrafficArgs(const std::vector<std::string>& args) {
  if (args.empty()) return invalid("give a role: sink or source");
  TrafficOptions o;
  core::FlagRules rules;
  rules.boolean = {"help"};
  if (args[0] == "sink") {
    o.role = TrafficRole::kSink;
    rules.valued = {"listen", "transport", "report-ms", "duration-s"};
  } else if (args[0] == "source") {
    o.role = TrafficRole::kSource;
    rules.valued = {"connect",   "transport",  "flows", "message-bytes",      "rate-mbps",   "dscp",
                    "report-ms", "duration-s", "depth", "congestion-control", "source-ports"};
  } else {
    return invalid("unknown role \"" + args[0] + "\": give sink or source");
  }
  auto line = core::parseCommandLine(std::vector<std::string>(args.begin() + 1, args.end()), rules);
  if (!line.isOk()) return line.status();
  bool have_address = false;
  for (const core::ParsedFlag& parsed : line->flags) {
    const std::string flag = "--" + parsed.name;
    const std::string& value = parsed.value;
    if (parsed.name == "help") continue;
    if (parsed.name == "listen" || parsed.name == "connect") {
      FC_RETURN_IF_ERROR(parseAddressPort(flag, value, &o.addr, &o.port));
      have_address = true;
      continue;
    }
    if (parsed.name == "transport") {
      auto transport = parseTransport(value);
      if (!transport) return invalid(flag + " \"" + value + "\": give tcp or verbs");
      o.transport = *transport;
      continue;
    }
    if (parsed.name == "congestion-control") {
      // A kernel module name: what TCP_CONGESTION takes (TCP_CA_NAME_MAX is 16 with the NUL).
      const bool valid = !value.empty() && value.size() < 16 &&
                         std::all_of(value.begin(), value.end(), [](char c) {
                           return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
                         });
      if (!valid) {
        return invalid(flag + " \"" + value +
                       "\": a congestion control name such as cubic or reno (a-z, 0-9, _)");
      }
      o.congestion_control = value;
      continue;
    }
    if (parsed.name == "source-ports") {
      auto ports = parseSourcePorts(flag, value);
      if (!ports.isOk()) return ports.status();
      o.source_ports = std::move(ports.value());
      continue;
    }
    int64_t min = 0;
    int64_t max = 0;
    if (parsed.name == "flows") {
      min = 1, max = kMaxTrafficFlows;
    } else if (parsed.name == "message-bytes") {
      min = kMinMessageBytes, max = kMaxMessageBytes;
    } else if (parsed.name == "rate-mbps") {
      min = 1, max = kMaxRateMbps;
    } else if (parsed.name == "dscp") {
      min = 0, max = 63;
    } else if (parsed.name == "report-ms") {
      min = 10, max = 10'000;
    } else if (parsed.name == "depth") {
      min = 1, max = kMaxVerbsDepth;
    } else {  // duration-s
      min = 1, max = kMaxTrafficDurationS;
    }
    auto number = core::parseFlagInteger(flag, value, min, max);
    if (!number.isOk()) return number.status();
    if (parsed.name == "flows") {
      o.flows = static_cast<int>(*number);
    } else if (parsed.name == "message-bytes") {
      o.message_bytes = *number;
    } else if (parsed.name == "rate-mbps") {
      o.rate_mbps = *number;
    } else if (parsed.name == "dscp") {
      o.dscp = static_cast<int>(*number);
    } else if (parsed.name == "report-ms") {
      o.report_ms = *number;
    } else if (parsed.name == "depth") {
      o.depth = static_cast<int>(*number);
    } else {
      o.duration_s = *number;
    }
  }
  if (!have_address) {
    return invalid(o.role == TrafficRole::kSink ? "--listen ADDR:PORT is required"
                                                : "--connect ADDR:PORT is required");
  }
  auto given = [&](const char* name) {
    return std::any_of(line->flags.begin(), line->flags.end(),
                       [&](const core::ParsedFlag& parsed) { return parsed.name == name; });
  };
  if (o.transport == TrafficTransport::kVerbs) {
    for (const char* tcp_only : {"congestion-control", "source-ports"}) {
      if (given(tcp_only)) {
        return invalid(std::string("--") + tcp_only +
                       " is for TCP flows; --transport verbs has no congestion control or "
                       "source ports to choose");
      }
    }
  } else if (given("depth")) {
    return invalid("--depth is for --transport verbs (RDMA writes in flight per flow)");
  }
  if (!o.source_ports.empty()) {
    if (!given("flows")) {
      o.flows = static_cast<int>(o.source_ports.size());
    } else if (static_cast<size_t>(o.flows) != o.source_ports.size()) {
      return invalid("--source-ports: " + std::to_string(o.source_ports.size()) +
                     " ports for --flows " + std::to_string(o.flows) + "; give one port per flow");
    }
  }
  return o;
}

std::string trafficUsage() {
  return R"(Usage: fabric-chaos traffic sink   --listen ADDR:PORT [--transport tcp|verbs]
                                   [--report-ms 100] [--duration-s S]
       fabric-chaos traffic source --connect ADDR:PORT [--transport tcp|verbs] [--flows N]
                                   [--message-bytes B] [--rate-mbps R] [--dscp D]
                                   [--congestion-control CC] [--source-ports P1,P2,..]
                                   [--depth N] [--report-ms 100] [--duration-s S]

Traffic between namespaces or hosts: the incast and hot-spot faults' aggressor. A sink accepts
any number of flows and discards what they send; a source keeps N flows to one sink busy,
retrying a refused, unreachable or lost connection every 100 ms until it is stopped.

  --transport T        tcp (default): TCP connections. verbs: one reliable-connected QP per flow
                       (rdma_cm, on the RDMA device that carries the address), streaming RDMA
                       WRITE WITH IMMEDIATE messages into a buffer the sink registered, as
                       ib_write_bw does; both ends must use the same transport
  --listen ADDR:PORT   sink: where to accept (numeric IPv4 or [IPv6] address; tcp: SO_REUSEADDR)
  --connect ADDR:PORT  source: the sink to send to (numeric address)
  --flows N            source: parallel connections, 1-64 (default 1)
  --message-bytes B    source: bytes per write (verbs: per RDMA write), 1024-16777216
                       (default 131072)
  --rate-mbps R        source: total Mbit/s over all flows, 1-400000, paced by a token bucket
                       (default: as fast as TCP goes)
  --dscp D             source: DSCP 0-63 of every flow (tcp: IP_TOS D<<2, ECN left to the
                       kernel; verbs: the RoCEv2 traffic class, RDMA_OPTION_ID_TOS)
  --congestion-control CC
                       source: TCP congestion control of every flow, e.g. cubic or reno, which
                       react to ECN marks (default: the host's, often bbr, which does not); one
                       this host does not have fails at start (exit 1)
  --source-ports P1,P2,..
                       source: flow i sends from local port Pi (one per flow; --flows defaults
                       to their count), which fixes each flow's five-tuple and so the path an
                       ECMP fabric hashes it onto; a port in use is retried like a refusal
  --depth N            source, verbs only: RDMA writes in flight per flow, 1-128 (default 16)
  --report-ms M        one JSON report line on stdout every M ms, 10-10000 (default 100)
  --duration-s S       stop after S seconds (default: run until SIGTERM or SIGINT)

Reports (one JSON object per line; the first right after listen / at start, the last one with
"final":true on stopping):
  {"role":"sink","t_ms":T,"bytes":B,"mbps":M,"flows":[{"peer":"A:P","bytes":B,"mbps":M,"open":true}]}
  {"role":"source","t_ms":T,"bytes":B,"mbps":M,"connected":C,"reconnects":R,
   "flows":[{"flow":0,"bytes":B,"mbps":M,"connected":true}]}
bytes are totals since start (a TCP source counts what its sockets accepted, a verbs source
what the sink's NIC acknowledged), mbps is over the last interval, reconnects counts connection
retries.

Exit status: 0 stopped, 1 the sink cannot listen, the congestion control is missing or (verbs)
the host has no RDMA device, 2 bad usage.
)";
}

TokenBucket::TokenBucket(int64_t rate_bytes_per_s, int64_t burst_bytes, int64_t now_ns)
    : rate_(std::max<int64_t>(rate_bytes_per_s, 1)),
      burst_(std::max<int64_t>(burst_bytes, 1)),
      tokens_(burst_),
      last_ns_(now_ns),
      carry_(0) {}

int64_t TokenBucket::available(int64_t now_ns) {
  if (now_ns > last_ns_) {
    if (tokens_ >= burst_) {
      carry_ = 0;  // a full bucket keeps no fraction
    } else {
      const __int128 scaled = static_cast<__int128>(rate_) * (now_ns - last_ns_) + carry_;
      const __int128 whole = scaled / kNsPerS;
      if (whole >= burst_ - tokens_) {
        tokens_ = burst_;
        carry_ = 0;
      } else {
        tokens_ += static_cast<int64_t>(whole);
        carry_ = static_cast<int64_t>(scaled % kNsPerS);
      }
    }
    last_ns_ = now_ns;
  }
  return tokens_;
}

void TokenBucket::consume(int64_t bytes) { tokens_ -= std::min(bytes, tokens_); }

int64_t TokenBucket::readyAt(int64_t bytes) const {
  bytes = std::min(bytes, burst_);
  if (tokens_ >= bytes) return last_ns_;
  const __int128 needed = static_cast<__int128>(bytes - tokens_) * kNsPerS - carry_;
  return last_ns_ + static_cast<int64_t>((needed + rate_ - 1) / rate_);
}

TokenBucket sourceBucket(int64_t rate_mbps, int64_t now_ns) {
  const int64_t rate = rate_mbps * kBytesPerSPerMbps;
  return TokenBucket(rate, std::max<int64_t>(rate / 100, 32 << 10), now_ns);
}

int64_t minPacedWrite(int64_t rate_mbps, int64_t message_bytes) {
  return std::clamp<int64_t>(rate_mbps * kBytesPerSPerMbps / 1000, 1024, message_bytes);
}

double mbps(int64_t bytes, int64_t ns) {
  if (ns <= 0) return 0;
  return static_cast<double>(bytes) * 8.0 * 1000.0 / static_cast<double>(ns);
}

int SinkLedger::opened(const std::string& peer) {
  const int id = next_id_++;
  flows_[id].peer = peer;
  return id;
}

void SinkLedger::received(int id, int64_t bytes) {
  auto it = flows_.find(id);
  if (it == flows_.end()) return;
  it->second.bytes += bytes;
  total_ += bytes;
}

void SinkLedger::closed(int id) {
  auto it = flows_.find(id);
  if (it != flows_.end()) it->second.open = false;
}

std::string SinkLedger::report(int64_t now_ns, bool final) {
  const int64_t interval = now_ns - last_report_ns_;
  ordered_json line;
  line["role"] = "sink";
  line["t_ms"] = elapsedMs(start_ns_, now_ns);
  line["bytes"] = total_;
  line["mbps"] = roundedMbps(total_ - total_at_report_, interval);
  ordered_json flows = ordered_json::array();
  for (auto it = flows_.begin(); it != flows_.end();) {
    Flow& flow = it->second;
    flows.push_back({{"peer", flow.peer},
                     {"bytes", flow.bytes},
                     {"mbps", roundedMbps(flow.bytes - flow.bytes_at_report, interval)},
                     {"open", flow.open}});
    flow.bytes_at_report = flow.bytes;
    it = flow.open ? std::next(it) : flows_.erase(it);
  }
  line["flows"] = std::move(flows);
  if (final) line["final"] = true;
  total_at_report_ = total_;
  last_report_ns_ = now_ns;
  return line.dump();
}

SourceLedger::SourceLedger(int flows, int64_t start_ns)
    : start_ns_(start_ns), last_report_ns_(start_ns), flows_(static_cast<size_t>(flows)) {}

void SourceLedger::sent(int flow, int64_t bytes) {
  flows_.at(static_cast<size_t>(flow)).bytes += bytes;
  total_ += bytes;
}

void SourceLedger::connected(int flow) {
  Flow& f = flows_.at(static_cast<size_t>(flow));
  f.connected = true;
  f.error.clear();
}

void SourceLedger::disconnected(int flow, const std::string& error) {
  Flow& f = flows_.at(static_cast<size_t>(flow));
  f.connected = false;
  f.error = error;
}

int SourceLedger::connectedFlows() const {
  return static_cast<int>(
      std::count_if(flows_.begin(), flows_.end(), [](const Flow& f) { return f.connected; }));
}

std::string SourceLedger::report(int64_t now_ns, bool final) {
  const int64_t interval = now_ns - last_report_ns_;
  ordered_json line;
  line["role"] = "source";
  line["t_ms"] = elapsedMs(start_ns_, now_ns);
  line["bytes"] = total_;
  line["mbps"] = roundedMbps(total_ - total_at_report_, interval);
  line["connected"] = connectedFlows();
  line["reconnects"] = reconnects_;
  ordered_json flows = ordered_json::array();
  for (size_t i = 0; i < flows_.size(); ++i) {
    Flow& flow = flows_[i];
    ordered_json entry{{"flow", i},
                       {"bytes", flow.bytes},
                       {"mbps", roundedMbps(flow.bytes - flow.bytes_at_report, interval)},
                       {"connected", flow.connected}};
    if (!flow.connected && !flow.error.empty()) entry["error"] = flow.error;
    flows.push_back(std::move(entry));
    flow.bytes_at_report = flow.bytes;
  }
  line["flows"] = std::move(flows);
  if (final) line["final"] = true;
  total_at_report_ = total_;
  last_report_ns_ = now_ns;
  return line.dump();
}

}  // namespace fabric_chaos::workload
