// The REST API under load, printed as figures measured side by side in one run against the real
// `fabric-chaos serve --with-lab 4` on a database seeded with one finished run of 300 000 samples
// (4 ranks x 75 000 iterations of ~3 ms, a few long stalls: the "long run"):
// 1. load: concurrent keep-alive clients alternate GET /healthz and GET /v1/runs/1 for a fixed
//    window, on the idle server and again while a 4-rank run records on the lab, viewers follow
//    the long run's event stream from its start (reopening it when it ends) and, with
//    --load-readers, readers loop on its first page of samples. p50 / p99 per route and the loaded
//    / idle p99 ratio (target <= 3);
// 2. measurement integrity: in one run, windows of 4 s with readers looping on its /samples
//    and viewers following its stream alternate with windows without; the median busbw of the
//    iterations stored in each kind of window, watched / unwatched (target >= 0.97). Beside it,
//    the same scenario's baseline busbw in a run nobody watched against the watched run's: two
//    runs differ by up to 15% unwatched, too much to resolve 3% with one pair;
// 3. ingest: the workload's peak sample rate (samples completed per 1-s window, all ranks, read
//    back from the recorded runs) against what the store sustains when written as the engine does
//    (one appendSamples per rank per 100 ms flush, the 4 ranks' from their own threads at once)
//    into a fresh database file (target >= 10x); beside it, the same appends one at a time.
// Requests go over this file's own HTTP/1.1 client on blocking sockets; everything listens on
// 127.0.0.1. serve is stopped with SIGINT (it removes its lab), the temporary directory removed,
// also after a failure or Ctrl-C. Root: serve brings up a namespace lab (fcl-*); the bench refuses
// to start when one is already up. Exceeding serve's 64-connection limit is not hidden: 503
// refusals are counted per client kind and printed. Not alongside tests that bring up a lab of
// their own (tests/privileged, the browser tier): they use the same fcl-* names. Run:
//   ./build/bench/api_load_bench [--binary PATH] [--load-clients 50] [--viewers 5]
//                                [--sample-readers 20] [--load-readers 0] [--window-s 10]
//                                [--baseline-ms 40000]

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_proc.h"
#include "bench/bench_shell.h"
#include "core/sample.h"
#include "store/store.h"

namespace {

using fabric_chaos::bench::cpuSecondsOf;
using fabric_chaos::bench::readFile;
using fabric_chaos::bench::shell;
using fabric_chaos::core::Sample;
using fabric_chaos::store::Store;
using nlohmann::json;

constexpr int kRanks = 4;
constexpr int64_t kLongRunIterations = 75000;
constexpr int kSeedBatch = 4096;
constexpr int kSamplePage = 100000;  // the API's largest page: "the whole first page"
constexpr int kIngestBatches = 200;
constexpr double kFlushMs = 100;  // the engine's per-rank flush interval (workload/rank.h)
constexpr int kRequestTimeoutMs = 60000;
constexpr int kStreamIdleTimeoutMs = 30000;
constexpr const char* kLabPrefix = "fcl-";

std::atomic<bool> g_interrupted{false};

void onSignal(int) { g_interrupted.store(true); }

int64_t nowNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

double msSince(int64_t start_ns) { return static_cast<double>(nowNs() - start_ns) / 1e6; }

void progress(const char* format, ...) {
  std::va_list args;
  va_start(args, format);
  std::fprintf(stderr, "api_load_bench: ");
  std::vfprintf(stderr, format, args);
  std::fprintf(stderr, "\n");
  va_end(args);
}

// The bench cannot go on: unwinds to main, which cleans up.
struct Failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void checkInterrupted() {
  if (g_interrupted.load()) throw Failure("interrupted");
}

// Sleeps up to ms, returning early when interrupted.
void sleepMs(int ms) {
  const int64_t end = nowNs() + int64_t{ms} * 1'000'000;
  while (nowNs() < end && !g_interrupted.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(
        std::min<int64_t>(50, std::max<int64_t>(1, (end - nowNs()) / 1'000'000))));
  }
}

// Nearest rank; NaN for none.
double percentile(std::vector<double> values, double p) {
  if (values.empty()) return std::nan("");
  std::sort(values.begin(), values.end());
  const auto rank = static_cast<size_t>(std::ceil(p * static_cast<double>(values.size())));
  return values[std::clamp<size_t>(rank, 1, values.size()) - 1];
}

// user + system CPU seconds: this process (every thread), and another by pid (its threads, not its
// children: serve's ranks are not counted).
double ownCpuSeconds() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

// serve and everything under it (the ranks, the guardian): the live processes' CPU and what they
// reaped, so that a rank that ends within a window still counts, in its parent's.
double treeCpuSeconds(pid_t root) {
  std::map<pid_t, std::vector<pid_t>> children;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
    const std::string stat = readFile(entry.path().string() + "/stat");
    const size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream fields(stat.substr(close + 2));
    std::string state;
    pid_t parent = 0;
    fields >> state >> parent;
    children[parent].push_back(std::atoi(name.c_str()));
  }
  double total = 0;
  std::vector<pid_t> todo = {root};
  while (!todo.empty()) {
    const pid_t pid = todo.back();
    todo.pop_back();
    total += cpuSecondsOf(pid, true);
    for (const pid_t child : children[pid]) todo.push_back(child);
  }
  return total;
}

// Busy CPU seconds of the whole machine (every core), from /proc/stat.
double machineBusySeconds() {
  std::istringstream stat(readFile("/proc/stat"));
  std::string cpu;
  double user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  stat >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal;
  return (user + nice + system + irq + softirq + steal) /
         static_cast<double>(::sysconf(_SC_CLK_TCK));
}

// CPU used over a stretch of wall time by this bench (its clients), by serve itself, by serve
// with its ranks, and by everything else on the machine (another session's build or tests).
struct CpuWindow {
  double wall_s = 0;
  double bench_s = 0;
  double serve_s = 0;
  double serve_tree_s = 0;
  double others_s = 0;
};

class CpuMeter {
 public:
  explicit CpuMeter(pid_t serve)
      : serve_(serve),
        wall_(nowNs()),
        own_(ownCpuSeconds()),
        serve_cpu_(cpuSecondsOf(serve)),
        tree_(treeCpuSeconds(serve)),
        machine_(machineBusySeconds()) {}
  CpuWindow read() const {
    CpuWindow w;
    w.wall_s = static_cast<double>(nowNs() - wall_) / 1e9;
    w.bench_s = ownCpuSeconds() - own_;
    w.serve_s = cpuSecondsOf(serve_) - serve_cpu_;
    w.serve_tree_s = treeCpuSeconds(serve_) - tree_;
    w.others_s = std::max(0.0, machineBusySeconds() - machine_ - w.bench_s - w.serve_tree_s);
    return w;
  }

 private:
  pid_t serve_;
  int64_t wall_;
  double own_;
  double serve_cpu_;
  double tree_;
  double machine_;
};

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

// ---------------------------------------------------------------------------------------------
// A small HTTP/1.1 client: one keep-alive connection, Content-Length and chunked bodies, and
// event streams read raw until the server closes them. Blocking sockets with a short receive
// timeout so that a stop request or a deadline is noticed within 250 ms.

struct Answer {
  int status = 0;
  std::string body;  // only when asked to keep it
  int64_t body_bytes = 0;
  bool close = false;
};

class HttpConnection {
 public:
  HttpConnection(int port, const std::atomic<bool>* stop) : port_(port), stop_(stop) {}
  ~HttpConnection() { disconnect(); }
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;

  void disconnect() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    in_.clear();
  }

  // Sends one request and reads its whole answer. False on a transport failure (said in
  // *error; the connection is closed), including a stop request or the timeout.
  bool roundTrip(const std::string& method, const std::string& target, const std::string& body,
                 bool keep_body, int timeout_ms, Answer* answer, std::string* error) {
    deadline_ns_ = nowNs() + int64_t{timeout_ms} * 1'000'000;
    *answer = Answer();
    if (fd_ < 0 && !connectNow(error)) return false;
    if (!sendAll(requestText(method, target, body, ""), error) ||
        !readAnswer(method, keep_body, answer, error)) {
      disconnect();
      return false;
    }
    if (answer->close) disconnect();
    return true;
  }

  // Opens an event stream: the request and the answer's head. A refusal (not 200) is read
  // whole into *answer, and the connection closed. Then readStream.
  bool openStream(const std::string& target, Answer* answer, std::string* error) {
    deadline_ns_ = nowNs() + int64_t{kRequestTimeoutMs} * 1'000'000;
    *answer = Answer();
    disconnect();  // a stream has its own connection
    if (!connectNow(error)) return false;
    bool chunked = false;
    int64_t length = -1;
    if (!sendAll(requestText("GET", target, "", "Accept: text/event-stream\r\n"), error) ||
        !readHead(answer, &chunked, &length, error)) {
      disconnect();
      return false;
    }
    if (answer->status != 200) {
      const bool ok = readBody(chunked, length, true, answer, error);
      disconnect();
      return ok;
    }
    return true;
  }

  // Reads an open stream until the server closes it (true) or it is stopped, idle for
  // idle_timeout_ms or reset (false). *saw_end: its `event: end` went by.
  bool readStream(int idle_timeout_ms, int64_t* bytes, bool* saw_end, std::string* error) {
    static const std::string kEnd = "event: end";
    std::string tail;
    for (;;) {
      tail += in_;
      if (tail.find(kEnd) != std::string::npos) *saw_end = true;
      if (tail.size() > kEnd.size()) tail.erase(0, tail.size() - kEnd.size());
      *bytes += static_cast<int64_t>(in_.size());
      in_.clear();
      deadline_ns_ = nowNs() + int64_t{idle_timeout_ms} * 1'000'000;
      const ssize_t got = fill(error);
      if (got == 0) {
        disconnect();
        return true;
      }
      if (got < 0) {
        disconnect();
        return false;
      }
    }
  }

 private:
  std::string requestText(const std::string& method, const std::string& target,
                          const std::string& body, const std::string& extra) const {
    std::string text = method + " " + target +
                       " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port_) + "\r\n" + extra;
    if (method != "GET") {
      text += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
              "\r\n";
    }
    return text + "\r\n" + body;
  }

  bool connectNow(std::string* error) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) {
      *error = std::string("socket: ") + std::strerror(errno);
      return false;
    }
    const int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    timeval connect_timeout{5, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &connect_timeout, sizeof(connect_timeout));
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port_));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
      *error = std::string("connect: ") + std::strerror(errno);
      disconnect();
      return false;
    }
    timeval tick{0, 250000};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tick, sizeof(tick));
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tick, sizeof(tick));
    return true;
  }

  // Why waiting must end now: a stop request or the deadline; "" to keep waiting.
  std::string mustGiveUp() const {
    if (stop_ != nullptr && stop_->load()) return "stopped";
    if (g_interrupted.load()) return "interrupted";
    if (nowNs() > deadline_ns_) return "timed out";
    return "";
  }

  bool sendAll(const std::string& data, std::string* error) {
    size_t sent = 0;
    while (sent < data.size()) {
      const ssize_t n = ::send(fd_, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
      if (n > 0) {
        sent += static_cast<size_t>(n);
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
        if (std::string why = mustGiveUp(); !why.empty()) {
          *error = "send: " + why;
          return false;
        }
        continue;
      }
      *error = std::string("send: ") + std::strerror(errno);
      return false;
    }
    return true;
  }

  // Appends what arrives to in_: the byte count, 0 at the end of the stream, -1 on failure.
  ssize_t fill(std::string* error) {
    char buffer[65536];
    for (;;) {
      const ssize_t n = ::recv(fd_, buffer, sizeof(buffer), 0);
      if (n > 0) {
        in_.append(buffer, static_cast<size_t>(n));
        return n;
      }
      if (n == 0) return 0;
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
        if (std::string why = mustGiveUp(); !why.empty()) {
          *error = "recv: " + why;
          return -1;
        }
        continue;
      }
      *error = std::string("recv: ") + std::strerror(errno);
      return -1;
    }
  }

  bool readLine(std::string* line, std::string* error) {
    size_t end;
    while ((end = in_.find("\r\n")) == std::string::npos) {
      if (fill(error) <= 0) {
        if (error->empty()) *error = "connection closed mid-answer";
        return false;
      }
    }
    *line = in_.substr(0, end);
    in_.erase(0, end + 2);
    return true;
  }

  bool readHead(Answer* answer, bool* chunked, int64_t* length, std::string* error) {
    size_t end;
    while ((end = in_.find("\r\n\r\n")) == std::string::npos) {
      const ssize_t got = fill(error);
      if (got <= 0) {
        if (got == 0)
          *error = in_.empty() ? "connection closed before an answer"
                               : "connection closed in the answer's head";
        return false;
      }
    }
    std::istringstream head(in_.substr(0, end));
    in_.erase(0, end + 4);
    std::string line;
    std::getline(head, line);
    if (line.rfind("HTTP/1.", 0) != 0 || line.size() < 12) {
      *error = "not an HTTP answer: " + line.substr(0, 60);
      return false;
    }
    answer->status = std::atoi(line.c_str() + 9);
    answer->close = line.rfind("HTTP/1.0", 0) == 0;
    while (std::getline(head, line)) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      const size_t colon = line.find(':');
      if (colon == std::string::npos) continue;
      const std::string name = lower(line.substr(0, colon));
      const std::string value = lower(line.substr(colon + 1));
      if (name == "content-length") *length = std::atoll(value.c_str());
      if (name == "transfer-encoding" && value.find("chunked") != std::string::npos) {
        *chunked = true;
      }
      if (name == "connection" && value.find("close") != std::string::npos) answer->close = true;
      if (name == "connection" && value.find("keep-alive") != std::string::npos) {
        answer->close = false;
      }
    }
    return true;
  }

  // Takes `count` bytes of body off the connection, into answer->body when keep.
  bool takeBytes(int64_t count, bool keep, Answer* answer, std::string* error) {
    while (count > 0) {
      if (in_.empty() && fill(error) <= 0) {
        if (error->empty()) *error = "connection closed mid-body";
        return false;
      }
      const auto take = static_cast<size_t>(std::min<int64_t>(count, in_.size()));
      if (keep) answer->body.append(in_, 0, take);
      in_.erase(0, take);
      answer->body_bytes += static_cast<int64_t>(take);
      count -= static_cast<int64_t>(take);
    }
    return true;
  }

  bool readBody(bool chunked, int64_t length, bool keep, Answer* answer, std::string* error) {
    if (chunked) {
      for (;;) {
        std::string line;
        if (!readLine(&line, error)) return false;
        const int64_t size = std::strtoll(line.c_str(), nullptr, 16);
        if (size == 0) {
          do {  // trailers, up to the empty line
            if (!readLine(&line, error)) return false;
          } while (!line.empty());
          return true;
        }
        if (!takeBytes(size, keep, answer, error) || !readLine(&line, error)) return false;
      }
    }
    if (length >= 0) return takeBytes(length, keep, answer, error);
    // Neither: the body ends with the connection.
    answer->close = true;
    for (;;) {
      if (keep) answer->body += in_;
      answer->body_bytes += static_cast<int64_t>(in_.size());
      in_.clear();
      const ssize_t got = fill(error);
      if (got == 0) return true;
      if (got < 0) return false;
    }
  }

  bool readAnswer(const std::string& method, bool keep, Answer* answer, std::string* error) {
    bool chunked = false;
    int64_t length = -1;
    if (!readHead(answer, &chunked, &length, error)) return false;
    if (method == "HEAD" || answer->status == 204 || answer->status == 304) return true;
    return readBody(chunked, length, keep, answer, error);
  }

  const int port_;
  const std::atomic<bool>* const stop_;
  int fd_ = -1;
  std::string in_;  // received, not yet consumed
  int64_t deadline_ns_ = 0;
};

// One request on a fresh connection, for control: the answer's JSON, or a Failure.
json requestJson(int port, const std::string& method, const std::string& target,
                 const json& body = nullptr, int expected_status = 200) {
  HttpConnection connection(port, nullptr);
  Answer answer;
  std::string error;
  if (!connection.roundTrip(method, target, body.is_null() ? "" : body.dump(), true,
                            kRequestTimeoutMs, &answer, &error)) {
    throw Failure(method + " " + target + ": " + error);
  }
  if (answer.status != expected_status) {
    throw Failure(method + " " + target + ": HTTP " + std::to_string(answer.status) + ": " +
                  answer.body.substr(0, 400));
  }
  json doc = json::parse(answer.body, nullptr, false);
  if (doc.is_discarded()) throw Failure(method + " " + target + ": not JSON");
  return doc;
}

// ---------------------------------------------------------------------------------------------
// Clients. Each thread writes only its own record; they are read after the threads are joined.

struct RouteStats {
  std::vector<double> latencies_ms;  // 200 answers
  int64_t refused = 0;               // 503: serve's connection limit
  int64_t failed = 0;                // another status, or a transport failure
  int64_t bytes = 0;
  std::string first_error;

  void fail(const std::string& error) {
    ++failed;
    if (first_error.empty()) first_error = error;
  }
  void merge(const RouteStats& other) {
    latencies_ms.insert(latencies_ms.end(), other.latencies_ms.begin(), other.latencies_ms.end());
    refused += other.refused;
    failed += other.failed;
    bytes += other.bytes;
    if (first_error.empty()) first_error = other.first_error;
  }
};

struct StreamStats {
  int64_t opened = 0;
  int64_t completed = 0;  // closed by serve after its `event: end`
  int64_t refused = 0;
  int64_t failed = 0;  // refused otherwise, cut before its end, idle too long
  int64_t bytes = 0;
  std::vector<double> replay_ms;  // open to end, completed ones
  std::string first_error;

  void fail(const std::string& error) {
    ++failed;
    if (first_error.empty()) first_error = error;
  }
  void merge(const StreamStats& other) {
    opened += other.opened;
    completed += other.completed;
    refused += other.refused;
    failed += other.failed;
    bytes += other.bytes;
    replay_ms.insert(replay_ms.end(), other.replay_ms.begin(), other.replay_ms.end());
    if (first_error.empty()) first_error = other.first_error;
  }
};

// Threads that run until stop() (or their own end time), each with its own record.
template <class Record>
class ClientGroup {
 public:
  ~ClientGroup() { stop(); }
  void add(std::function<void(const std::atomic<bool>& stop, Record& record)> body) {
    records_.push_back(std::make_unique<Record>());
    Record* record = records_.back().get();
    threads_.emplace_back([this, body = std::move(body), record] {
      body(stop_, *record);
      done_.fetch_add(1);
    });
  }
  // Waits up to timeout_ms for every thread to end on its own.
  void waitDone(int timeout_ms) {
    const int64_t deadline = nowNs() + int64_t{timeout_ms} * 1'000'000;
    while (done_.load() < static_cast<int>(threads_.size()) && nowNs() < deadline &&
           !g_interrupted.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  void stop() {
    stop_.store(true);
    join();
  }
  void join() {
    for (auto& thread : threads_) {
      if (thread.joinable()) thread.join();
    }
  }
  Record total() const {
    Record sum;
    for (const auto& record : records_) sum.merge(*record);
    return sum;
  }
  size_t size() const { return records_.size(); }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<int> done_{0};
  std::vector<std::unique_ptr<Record>> records_;
  std::vector<std::thread> threads_;
};

// A load client's two routes, alternated.
struct LoadRecord {
  RouteStats routes[2];
  bool ever_admitted = false;
  void merge(const LoadRecord& other) {
    routes[0].merge(other.routes[0]);
    routes[1].merge(other.routes[1]);
    ever_admitted = ever_admitted || other.ever_admitted;
  }
};

struct LoadResult {
  RouteStats routes[2];
  int clients = 0;
  int never_admitted = 0;  // clients that had every connection refused
};

// n keep-alive clients alternating targets[0] and targets[1]: a warm-up request each (connect
// and first answer, not recorded), then every answer from start to start + window recorded; a
// request started before the end is waited for.
LoadResult runLoad(int port, int clients, int window_s, const std::string targets[2]) {
  const int64_t start_ns = nowNs() + 1'500'000'000;
  const int64_t end_ns = start_ns + int64_t{window_s} * 1'000'000'000;
  std::vector<std::unique_ptr<LoadRecord>> records;
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    records.push_back(std::make_unique<LoadRecord>());
    LoadRecord* record = records.back().get();
    threads.emplace_back([=, &targets] {
      HttpConnection connection(port, nullptr);
      Answer answer;
      std::string error;
      while (nowNs() < start_ns && !g_interrupted.load()) {  // warm-up: one answer, if let in
        if (connection.roundTrip("GET", targets[0], "", false, kRequestTimeoutMs, &answer,
                                 &error) &&
            answer.status == 200) {
          record->ever_admitted = true;
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      while (nowNs() < start_ns) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      for (int i = c % 2; nowNs() < end_ns && !g_interrupted.load(); ++i) {
        RouteStats& route = record->routes[i % 2];
        const int64_t sent_ns = nowNs();
        error.clear();
        if (!connection.roundTrip("GET", targets[i % 2], "", false, kRequestTimeoutMs, &answer,
                                  &error)) {
          if (g_interrupted.load()) break;
          route.fail(error);
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
          continue;
        }
        const double ms = msSince(sent_ns);
        if (answer.status == 200) {
          route.latencies_ms.push_back(ms);
          route.bytes += answer.body_bytes;
          record->ever_admitted = true;
        } else if (answer.status == 503) {
          ++route.refused;
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
        } else {
          route.fail("HTTP " + std::to_string(answer.status));
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  checkInterrupted();
  LoadResult result;
  result.clients = clients;
  for (const auto& record : records) {
    result.routes[0].merge(record->routes[0]);
    result.routes[1].merge(record->routes[1]);
    if (!record->ever_admitted) ++result.never_admitted;
  }
  return result;
}

// A reader looping on one GET (the body counted, not kept) until stopped.
void addReaders(ClientGroup<RouteStats>& group, int port, int count, const std::string& target) {
  for (int r = 0; r < count; ++r) {
    group.add([port, target](const std::atomic<bool>& stop, RouteStats& stats) {
      HttpConnection connection(port, &stop);
      Answer answer;
      std::string error;
      while (!stop.load() && !g_interrupted.load()) {
        const int64_t sent_ns = nowNs();
        error.clear();
        if (!connection.roundTrip("GET", target, "", false, kRequestTimeoutMs, &answer, &error)) {
          if (stop.load() || g_interrupted.load()) break;  // cut by the stop: not a result
          stats.fail(error);
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
          continue;
        }
        if (answer.status == 200) {
          stats.latencies_ms.push_back(msSince(sent_ns));
          stats.bytes += answer.body_bytes;
        } else if (answer.status == 503) {
          ++stats.refused;
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
        } else {
          stats.fail("HTTP " + std::to_string(answer.status));
        }
      }
    });
  }
}

// A viewer following an event stream from its start to its end, and then again when `reopen`.
void addViewers(ClientGroup<StreamStats>& group, int port, int count, const std::string& target,
                bool reopen) {
  for (int v = 0; v < count; ++v) {
    group.add([port, target, reopen](const std::atomic<bool>& stop, StreamStats& stats) {
      HttpConnection connection(port, &stop);
      while (!stop.load() && !g_interrupted.load()) {
        Answer answer;
        std::string error;
        const int64_t opened_ns = nowNs();
        if (!connection.openStream(target, &answer, &error)) {
          if (stop.load() || g_interrupted.load()) break;
          stats.fail(error);
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
          continue;
        }
        if (answer.status != 200) {
          if (answer.status == 503) {
            ++stats.refused;
          } else {
            stats.fail("HTTP " + std::to_string(answer.status));
          }
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
          continue;
        }
        ++stats.opened;
        bool saw_end = false;
        const bool ended =
            connection.readStream(kStreamIdleTimeoutMs, &stats.bytes, &saw_end, &error);
        if (stop.load() || g_interrupted.load()) break;
        if (ended && saw_end) {
          ++stats.completed;
          stats.replay_ms.push_back(msSince(opened_ns));
          if (!reopen) break;
        } else {
          stats.fail(ended ? "stream closed before its end event" : error);
        }
      }
    });
  }
}

// ---------------------------------------------------------------------------------------------
// The seeded database: one finished 4-rank run of 300 000 samples.

void check(const fabric_chaos::core::Status& status, const std::string& what) {
  if (!status.isOk()) throw Failure(what + ": " + status.toString());
}

void seedLongRun(const std::string& db_path) {
  auto opened = Store::open(db_path);
  check(opened.status(), "open " + db_path);
  Store& store = **opened;
  const json scenario = {{"version", 1},
                         {"name", "long-run"},
                         {"description", "seeded by api_load_bench"},
                         {"workload", {{"message_bytes", 262144}, {"compute_ms", 0}}},
                         {"baseline_ms", 9000},
                         {"steps", json::array()},
                         {"recovery_ms", 5000}};
  auto id = store.createRun("long-run", scenario, "netns-lab");
  check(id.status(), "create run");
  if (*id != 1) throw Failure("the seeded run is not run 1 but " + std::to_string(*id));
  for (const char* state : {"preparing", "baseline", "injecting", "recovering", "analysing"}) {
    check(store.setRunState(*id, state), "set state");
  }
  // Every rank in lockstep: ~3 ms iterations with a little jitter, and five stalls of 1.5 s.
  const int64_t stall_every = kLongRunIterations / 6;
  std::vector<Sample> batch;
  std::vector<double> stalls_at;
  double t = 0;
  uint32_t noise = 12345;
  for (int64_t i = 0; i < kLongRunIterations; ++i) {
    noise = noise * 1664525u + 1013904223u;
    double duration = 2.6 + 0.8 * static_cast<double>(noise >> 8) / static_cast<double>(1 << 24);
    if (i > 0 && i % stall_every == 0) {
      duration = 1500;
      stalls_at.push_back(t);
    }
    for (int rank = 0; rank < kRanks; ++rank) {
      batch.push_back({rank, i, t + 0.01 * rank, duration - 0.01 * rank, 262144});
    }
    t += duration;
    if (static_cast<int>(batch.size()) >= kSeedBatch) {
      check(store.appendSamples(*id, batch), "append samples");
      batch.clear();
    }
  }
  check(store.appendSamples(*id, batch), "append samples");
  for (int rank = 0; rank < kRanks; ++rank) {
    check(store.appendEvent({*id, 0, 0, "rank_started", {{"rank", rank}}}), "event");
  }
  for (size_t s = 0; s < stalls_at.size(); ++s) {
    const json detail = {{"step", s}, {"kind", "link_flap"}};
    check(store.appendEvent({*id, stalls_at[s], 0, "fault_applied", detail}), "event");
    check(store.appendEvent({*id, stalls_at[s] + 1500, 0, "fault_reverted", detail}), "event");
  }
  const double busbw = 262144 / 3e-3 / 1e9 * 2.0 * (kRanks - 1) / kRanks;
  const json result = {{"analysis",
                        {{"rate_unit", "busbw_gbps"},
                         {"baseline_busbw_gbps", busbw},
                         {"baseline_iterations", 3000 * kRanks},
                         {"score", 88.5},
                         {"note", ""},
                         {"steps", json::array()}}},
                       {"baseline", {{"start_ms", 0}, {"end_ms", 9000}}},
                       {"observe_end_ms", t},
                       {"world_size", kRanks},
                       {"samples", kRanks * kLongRunIterations},
                       {"passed", true},
                       {"gates", json::array()}};
  check(store.finishRun(*id, "passed", 88.5, result, ""), "finish run");
}

// ---------------------------------------------------------------------------------------------
// serve, started and stopped by pid.

std::vector<std::string> labNamespaces() {
  std::vector<std::string> names;
  std::istringstream list(shell("ip netns list 2>/dev/null"));
  for (std::string line; std::getline(list, line);) {
    const std::string name = line.substr(0, line.find(' '));
    if (name.rfind(kLabPrefix, 0) == 0) names.push_back(name);
  }
  return names;
}

// A namespace by name and identity (the nsfs inode behind /run/netns/NAME): another session's
// lab may reuse the fcl-* names once ours is gone, and `lab down` removes every fcl-* namespace,
// so ours are told apart by identity and removed one by one, never by prefix.
struct NetnsIdentity {
  std::string name;
  dev_t dev = 0;
  ino_t ino = 0;
};

std::vector<NetnsIdentity> labNamespaceIdentities() {
  std::vector<NetnsIdentity> out;
  for (const std::string& name : labNamespaces()) {
    struct stat st {};
    if (::stat(("/run/netns/" + name).c_str(), &st) == 0)
      out.push_back({name, st.st_dev, st.st_ino});
  }
  return out;
}

bool stillThere(const NetnsIdentity& ns) {
  struct stat st {};
  return ::stat(("/run/netns/" + ns.name).c_str(), &st) == 0 && st.st_dev == ns.dev &&
         st.st_ino == ns.ino;
}

// Processes whose command line names `text` (our temporary directory): serve's guardian and
// anything else serve left behind.
std::vector<pid_t> processesNaming(const std::string& text) {
  std::vector<pid_t> pids;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
    const pid_t pid = std::atoi(name.c_str());
    if (pid == ::getpid()) continue;
    std::string cmdline = readFile(entry.path().string() + "/cmdline");
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    if (cmdline.find(text) != std::string::npos) pids.push_back(pid);
  }
  return pids;
}

class ServeProcess {
 public:
  ServeProcess(std::string binary, std::string dir)
      : binary_(std::move(binary)), dir_(std::move(dir)) {}
  ~ServeProcess() { stop(); }

  const std::string& logPath() const { return log_; }
  pid_t pid() const { return pid_; }
  std::string log() const { return readFile(log_); }

  // Starts serve and waits for its `serving on http://127.0.0.1:PORT` line: the port.
  int start(int timeout_s) {
    log_ = dir_ + "/serve.log";
    const std::vector<std::string> args = {
        binary_, "serve",         "--no-auth",   "--listen",      "127.0.0.1:0",
        "--db",  dir_ + "/fc.db", "--state-dir", dir_ + "/state", "--with-lab",
        "4"};
    pid_ = ::fork();
    if (pid_ < 0) throw Failure(std::string("fork: ") + std::strerror(errno));
    if (pid_ == 0) {
      ::setpgid(0, 0);  // our Ctrl-C reaches serve through stop(), once
      const int fd = ::open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (fd >= 0) {
        ::dup2(fd, 1);
        ::dup2(fd, 2);
      }
      std::vector<char*> argv;
      for (const auto& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
      argv.push_back(nullptr);
      ::execv(binary_.c_str(), argv.data());
      std::fprintf(stderr, "exec %s: %s\n", binary_.c_str(), std::strerror(errno));
      ::_exit(127);
    }
    const std::string marker = "serving on http://127.0.0.1:";
    const int64_t deadline = nowNs() + int64_t{timeout_s} * 1'000'000'000;
    while (nowNs() < deadline) {
      checkInterrupted();
      const std::string text = log();
      if (const size_t at = text.find(marker); at != std::string::npos) {
        return std::atoi(text.c_str() + at + marker.size());
      }
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        throw Failure("serve exited before serving:\n" + text);
      }
      sleepMs(100);
    }
    throw Failure("serve did not print its port within " + std::to_string(timeout_s) + " s:\n" +
                  log());
  }

  bool alive() {
    if (pid_ <= 0) return false;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      exit_text_ = describeExit(status);
      return false;
    }
    return true;
  }

  // SIGINT and a wait (serve removes its lab), then SIGTERM, then SIGKILL. How it ended.
  std::string stop() {
    if (pid_ <= 0) return exit_text_;
    ::kill(pid_, SIGINT);
    // After SIGINT wait 90 s, then SIGTERM and 15 s, then SIGKILL and 5 s.
    const std::pair<int, int> kSteps[] = {{SIGTERM, 90}, {SIGKILL, 15}, {0, 5}};
    for (const auto& [sig, wait_s] : kSteps) {
      const int64_t deadline = nowNs() + int64_t{wait_s} * 1'000'000'000;
      while (nowNs() < deadline) {
        int status = 0;
        if (::waitpid(pid_, &status, WNOHANG) == pid_) {
          pid_ = -1;
          exit_text_ = describeExit(status);
          if (sig != SIGTERM) exit_text_ += " (after it ignored SIGINT for 90 s)";
          return exit_text_;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      if (sig != 0) ::kill(pid_, sig);
    }
    exit_text_ = "did not exit even after SIGKILL";
    return exit_text_;
  }

 private:
  static std::string describeExit(int status) {
    if (WIFEXITED(status)) return "exit code " + std::to_string(WEXITSTATUS(status));
    if (WIFSIGNALED(status)) return std::string("killed by ") + strsignal(WTERMSIG(status));
    return "ended";
  }

  const std::string binary_;
  const std::string dir_;
  std::string log_;
  pid_t pid_ = -1;
  std::string exit_text_;
};

// ---------------------------------------------------------------------------------------------
// Runs through the API.

bool isFinal(const std::string& state) {
  return state == "passed" || state == "failed" || state == "aborted" || state == "interrupted" ||
         state == "error";
}

json baselineScenario(int baseline_ms) {
  return {{"version", 1},
          {"name", "api-load-baseline"},
          {"description", "A 4-rank TCP ring with no fault: api_load_bench's recording run."},
          {"workload", {{"transport", "tcp"}, {"message_bytes", 262144}, {"compute_ms", 5}}},
          {"baseline_ms", baseline_ms},
          {"steps", json::array()},
          {"recovery_ms", 500}};
}

int64_t submitRun(int port, const json& scenario) {
  const json answer = requestJson(port, "POST", "/v1/runs", {{"scenario", scenario}}, 202);
  return answer.at("id").get<int64_t>();
}

// Polls the run every poll_ms until `done` says so; the last document. A Failure on timeout.
json waitForRun(int port, int64_t id, int timeout_s, int poll_ms,
                const std::function<bool(const json&)>& done, const std::string& what) {
  const int64_t deadline = nowNs() + int64_t{timeout_s} * 1'000'000'000;
  std::string last_state;
  for (;;) {
    checkInterrupted();
    json run = requestJson(port, "GET", "/v1/runs/" + std::to_string(id));
    const std::string state = run.value("state", "");
    if (state != last_state) {
      progress("  run %lld: %s", static_cast<long long>(id), state.c_str());
      last_state = state;
    }
    if (done(run)) return run;
    if (isFinal(state))
      throw Failure("run " + std::to_string(id) + " ended " + state + " before " + what + ": " +
                    run.value("error", ""));
    if (nowNs() > deadline) {
      throw Failure("run " + std::to_string(id) + " not " + what + " within " +
                    std::to_string(timeout_s) + " s (state " + state + ")");
    }
    sleepMs(poll_ms);
  }
}

json waitForEnd(int port, int64_t id, int timeout_s, int poll_ms) {
  return waitForRun(
      port, id, timeout_s, poll_ms, [](const json& run) { return isFinal(run.value("state", "")); },
      "ended");
}

// Recording: in its baseline with samples stored.
json waitForRecording(int port, int64_t id, int timeout_s) {
  return waitForRun(
      port, id, timeout_s, 250,
      [](const json& run) {
        const json live = run.value("live", json());
        return run.value("state", "") == "baseline" && live.is_object() &&
               live.value("samples", int64_t{0}) > 0;
      },
      "recording");
}

struct RunFigures {
  int64_t id = 0;
  std::string state;
  std::string error;
  double baseline_busbw_gbps = std::nan("");
  int64_t baseline_iterations = 0;
  int64_t samples = 0;
  double peak_samples_per_s = 0;  // completed per 1-s window, all ranks
  double duration_ms = 0;
};

RunFigures figuresOf(const json& run) {
  RunFigures f;
  f.id = run.value("id", int64_t{0});
  f.state = run.value("state", "");
  f.error = run.value("error", "");
  const json result = run.value("result", json::object());
  const json analysis = result.is_object() ? result.value("analysis", json()) : json();
  if (analysis.is_object()) {
    if (analysis.contains("baseline_busbw_gbps") && analysis["baseline_busbw_gbps"].is_number()) {
      f.baseline_busbw_gbps = analysis["baseline_busbw_gbps"].get<double>();
    }
    f.baseline_iterations = analysis.value("baseline_iterations", int64_t{0});
  }
  if (run.contains("duration_ms") && run["duration_ms"].is_number()) {
    f.duration_ms = run["duration_ms"].get<double>();
  }
  return f;
}

// Every sample of run `run` stored after seq `after`, page by page (after / next_after), to
// `each`; the last seq seen (`after` when there was none).
int64_t forEachSample(int port, int64_t run, int64_t after,
                      const std::function<void(const json& sample)>& each) {
  for (;;) {
    checkInterrupted();
    const json page =
        requestJson(port, "GET",
                    "/v1/runs/" + std::to_string(run) + "/samples?after=" + std::to_string(after) +
                        "&limit=" + std::to_string(kSamplePage));
    for (const json& sample : page.at("samples")) {
      after = sample.at("seq").get<int64_t>();
      each(sample);
    }
    if (page.value("next_after", json()).is_null()) return after;
  }
}

// Reads every sample of a run page by page (after / next_after) and finds the most completed
// in any 1-s window of the samples' clock, all ranks together.
void measurePeakRate(int port, RunFigures* run) {
  std::map<int64_t, int64_t> per_second;
  forEachSample(port, run->id, 0, [&](const json& s) {
    const double end_ms = s.at("start_ms").get<double>() + s.at("duration_ms").get<double>();
    ++per_second[static_cast<int64_t>(std::floor(end_ms / 1000))];
    ++run->samples;
  });
  for (const auto& [second, count] : per_second) {
    run->peak_samples_per_s = std::max(run->peak_samples_per_s, static_cast<double>(count));
  }
}

// ---------------------------------------------------------------------------------------------
// The store written as the engine writes: one appendSamples per rank per flush.

struct IngestFigures {
  int batch = 0;
  double samples_per_s = 0;
  double append_p50_ms = 0;
  double append_p99_ms = 0;
};

// kIngestBatches appends of `batch` samples, kRanks ranks taking turns. With `ranks_at_once` each
// rank appends from its own thread, as the engine's ranks flush (so that batches arriving together
// may share a commit); otherwise one append at a time.
IngestFigures measureIngest(const std::string& db_path, int batch, bool ranks_at_once) {
  auto opened = Store::open(db_path);
  check(opened.status(), "open " + db_path);
  Store& store = **opened;
  auto id = store.createRun("ingest", json{{"name", "ingest"}}, "netns-lab");
  check(id.status(), "create run");
  std::vector<double> append_ms[kRanks];
  std::string errors[kRanks];
  auto appendAs = [&](int rank, int appends) {
    int64_t iteration = 0;
    for (int b = 0; b < appends; ++b) {
      std::vector<Sample> samples;
      for (int k = 0; k < batch; ++k, ++iteration) {
        samples.push_back({rank, iteration, static_cast<double>(iteration) * 8.0, 3.0, 262144});
      }
      const int64_t call = nowNs();
      if (auto status = store.appendSamples(*id, samples); !status.isOk()) {
        errors[rank] = status.toString();
        return;
      }
      append_ms[rank].push_back(msSince(call));
    }
  };
  const int64_t start = nowNs();
  if (ranks_at_once) {
    std::vector<std::thread> ranks;
    for (int rank = 0; rank < kRanks; ++rank) {
      ranks.emplace_back(appendAs, rank, kIngestBatches / kRanks);
    }
    for (auto& rank : ranks) rank.join();
  } else {
    for (int round = 0; round < kIngestBatches / kRanks; ++round) {
      for (int rank = 0; rank < kRanks; ++rank) appendAs(rank, 1);
    }
  }
  const double seconds = static_cast<double>(nowNs() - start) / 1e9;
  std::vector<double> all_ms;
  for (int rank = 0; rank < kRanks; ++rank) {
    if (!errors[rank].empty()) throw Failure("append samples: " + errors[rank]);
    all_ms.insert(all_ms.end(), append_ms[rank].begin(), append_ms[rank].end());
  }
  IngestFigures f;
  f.batch = batch;
  f.samples_per_s = static_cast<double>(all_ms.size()) * batch / seconds;
  f.append_p50_ms = percentile(all_ms, 0.5);
  f.append_p99_ms = percentile(all_ms, 0.99);
  return f;
}

// ---------------------------------------------------------------------------------------------
// Printing.

std::string fmt(const char* format, ...) {
  char text[512];
  std::va_list args;
  va_start(args, format);
  std::vsnprintf(text, sizeof(text), format, args);
  va_end(args);
  return text;
}

std::string p50p99(const std::vector<double>& ms) {
  if (ms.empty()) return "n/a";
  return fmt("%.1f/%.1f", percentile(ms, 0.5), percentile(ms, 0.99));
}

std::string problems(const RouteStats& s) {
  std::string text = fmt("%zu ok", s.latencies_ms.size());
  if (s.refused > 0) text += fmt(", %lld refused 503", static_cast<long long>(s.refused));
  if (s.failed > 0) {
    text +=
        fmt(", %lld failed (first: %s)", static_cast<long long>(s.failed), s.first_error.c_str());
  }
  return text;
}

std::string problems(const StreamStats& s) {
  std::string text = fmt("%lld opened, %lld replayed to their end",
                         static_cast<long long>(s.opened), static_cast<long long>(s.completed));
  if (!s.replay_ms.empty()) text += fmt(" (median %.0f ms)", percentile(s.replay_ms, 0.5));
  text += fmt(", %.1f MB", static_cast<double>(s.bytes) / 1e6);
  if (s.refused > 0) text += fmt(", %lld refused 503", static_cast<long long>(s.refused));
  if (s.failed > 0) {
    text +=
        fmt(", %lld failed (first: %s)", static_cast<long long>(s.failed), s.first_error.c_str());
  }
  return text;
}

std::string readersLine(const RouteStats& s) {
  return fmt("p50/p99 %s ms, %.0f MB read; %s", p50p99(s.latencies_ms).c_str(),
             static_cast<double>(s.bytes) / 1e6, problems(s).c_str());
}

double ratio(double a, double b) { return (b > 0 && std::isfinite(a)) ? a / b : std::nan(""); }

// ---------------------------------------------------------------------------------------------

// ---------------------------------------------------------------------------------------------
// Watched and unwatched windows of one run.

constexpr int kWatchWindowMs = 4000;

// Where the samples stored so far end: the highest seq, read page by page from a cursor.
class SeqCursor {
 public:
  SeqCursor(int port, int64_t run) : port_(port), run_(run) {}
  int64_t advance() {
    seq_ = forEachSample(port_, run_, seq_, [](const json&) {});
    return seq_;
  }

 private:
  int port_;
  int64_t run_;
  int64_t seq_ = 0;
};

struct WatchWindow {
  int64_t from_seq;  // samples after this seq, up to the next window's
  bool watched;
};

struct Alternation {
  int windows_watched = 0;
  int windows_unwatched = 0;
  int64_t samples_watched = 0;
  int64_t samples_unwatched = 0;
  double median_watched_gbps = std::nan("");
  double median_unwatched_gbps = std::nan("");
};

// The median busbw of the iterations in watched windows and in unwatched ones, from every sample
// of the run (the first quarter of each window's left out).
Alternation compareWindows(int port, int64_t run, const std::vector<WatchWindow>& windows) {
  std::vector<std::pair<int64_t, double>> samples;  // seq, busbw
  forEachSample(port, run, 0, [&](const json& sample) {
    samples.emplace_back(sample.at("seq").get<int64_t>(), sample.at("busbw_gbps").get<double>());
  });
  std::vector<double> watched, unwatched;
  Alternation out;
  for (size_t w = 0; w + 1 < windows.size(); ++w) {  // the last window is the run's end
    const int64_t from = windows[w].from_seq;
    const int64_t to = windows[w + 1].from_seq;
    const int64_t skip_to = from + (to - from) / 4;
    std::vector<double>& into = windows[w].watched ? watched : unwatched;
    (windows[w].watched ? out.windows_watched : out.windows_unwatched)++;
    for (const auto& [seq, busbw] : samples) {
      if (seq > skip_to && seq <= to) into.push_back(busbw);
    }
  }
  out.samples_watched = static_cast<int64_t>(watched.size());
  out.samples_unwatched = static_cast<int64_t>(unwatched.size());
  if (!watched.empty()) out.median_watched_gbps = percentile(watched, 0.5);
  if (!unwatched.empty()) out.median_unwatched_gbps = percentile(unwatched, 0.5);
  return out;
}

struct Options {
  std::string binary;
  int load_clients = 50;
  int viewers = 5;
  int sample_readers = 20;  // of the watched run (part 2)
  // Of the long run's first page during the loaded window (part 1b). Issue 15's load case is the
  // 50 clients, the recording run and the 5 viewers; readers on top exceed serve's 64
  // connections from 10 on.
  int load_readers = 0;
  int window_s = 10;
  int baseline_ms = 40000;
};

Options parseOptions(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw Failure(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--binary") {
      options.binary = value();
    } else if (arg == "--load-clients") {
      options.load_clients = std::stoi(value());
    } else if (arg == "--viewers") {
      options.viewers = std::stoi(value());
    } else if (arg == "--sample-readers") {
      options.sample_readers = std::stoi(value());
    } else if (arg == "--load-readers") {
      options.load_readers = std::stoi(value());
    } else if (arg == "--window-s") {
      options.window_s = std::stoi(value());
    } else if (arg == "--baseline-ms") {
      options.baseline_ms = std::stoi(value());
    } else {
      throw Failure("unknown argument " + arg +
                    " (--binary PATH, --load-clients N, --viewers N, --sample-readers N, "
                    "--load-readers N, --window-s N, --baseline-ms N)");
    }
  }
  if (options.binary.empty()) {
    std::error_code ec;
    const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    options.binary = (self.parent_path() / ".." / "app" / "fabric-chaos").lexically_normal();
  }
  return options;
}

int runBench(const Options& options, const std::string& dir) {
  const int64_t bench_start = nowNs();
  if (::geteuid() != 0) throw Failure("needs root: serve --with-lab builds namespaces");
  if (::access(options.binary.c_str(), X_OK) != 0) {
    throw Failure("no fabric-chaos binary at " + options.binary + " (--binary PATH)");
  }
  if (const auto existing = labNamespaces(); !existing.empty()) {
    throw Failure("a lab is already up (" + existing.front() +
                  " ...); this bench brings up its own with serve --with-lab 4");
  }

  progress("seeding %s/fc.db: run 1, %d ranks x %lld iterations", dir.c_str(), kRanks,
           static_cast<long long>(kLongRunIterations));
  int64_t stage = nowNs();
  seedLongRun(dir + "/fc.db");
  progress("seeded in %.1f s", msSince(stage) / 1000);

  progress("starting %s serve --with-lab 4", options.binary.c_str());
  stage = nowNs();
  ServeProcess serve(options.binary, dir);
  int port = 0;
  std::string serve_exit;
  // Everything that needs serve is in here; serve is stopped after it whatever happens.
  LoadResult idle;
  LoadResult loaded;
  RouteStats loaded_readers;
  StreamStats loaded_viewers;
  RouteStats watched_readers;
  StreamStats watched_viewers;
  std::vector<WatchWindow> watch_windows;
  Alternation alternation;
  RunFigures unwatched;
  RunFigures watched;
  RunFigures under_load;
  CpuWindow cpu_idle;
  CpuWindow cpu_unwatched;
  CpuWindow cpu_watched;
  CpuWindow cpu_loaded;
  std::string failure;
  try {
    port = serve.start(180);
    progress("serve on 127.0.0.1:%d after %.1f s", port, msSince(stage) / 1000);
    const json long_run = requestJson(port, "GET", "/v1/runs/1");
    if (long_run.value("state", "") != "passed") {
      throw Failure("run 1 is " + long_run.value("state", "") + ", not the seeded passed run");
    }
    const std::string load_targets[2] = {"/healthz", "/v1/runs/1"};

    // 1a. The idle server.
    progress("1a: %d load clients on the idle server for %d s", options.load_clients,
             options.window_s);
    {
      const CpuMeter meter(serve.pid());
      idle = runLoad(port, options.load_clients, options.window_s, load_targets);
      cpu_idle = meter.read();
    }
    progress("  healthz %s ms, run %s ms", p50p99(idle.routes[0].latencies_ms).c_str(),
             p50p99(idle.routes[1].latencies_ms).c_str());

    const json scenario = baselineScenario(options.baseline_ms);
    const int run_timeout_s = options.baseline_ms / 1000 + 120;

    // 2, unwatched: nothing but this poll every 2 s.
    progress("2: unwatched run (baseline %d ms, no other client)", options.baseline_ms);
    unwatched.id = submitRun(port, scenario);
    {
      const CpuMeter meter(serve.pid());
      const json run = waitForEnd(port, unwatched.id, run_timeout_s, 2000);
      cpu_unwatched = meter.read();
      const int64_t id = unwatched.id;
      unwatched = figuresOf(run);
      unwatched.id = id;
    }

    // 2, watched: in the same run, windows of kWatchWindowMs with readers of its /samples and
    // viewers of its stream alternate with windows without; a window's samples are those stored
    // between its two toggles (by seq), the first quarter of each left out (batches in flight).
    progress(
        "2: watched run: %d readers of its /samples and %d viewers of its stream, on and "
        "off every %d ms",
        options.sample_readers, options.viewers, kWatchWindowMs);
    watched.id = submitRun(port, scenario);
    {
      const CpuMeter meter(serve.pid());
      const std::string base = "/v1/runs/" + std::to_string(watched.id);
      waitForRecording(port, watched.id, 120);
      SeqCursor cursor(port, watched.id);
      bool watching = false;
      json run;
      for (;;) {
        watch_windows.push_back({cursor.advance(), watching});
        std::unique_ptr<ClientGroup<RouteStats>> readers;
        std::unique_ptr<ClientGroup<StreamStats>> viewers;
        if (watching) {
          readers = std::make_unique<ClientGroup<RouteStats>>();
          viewers = std::make_unique<ClientGroup<StreamStats>>();
          addViewers(*viewers, port, options.viewers, base + "/stream", false);
          addReaders(*readers, port, options.sample_readers,
                     base + "/samples?limit=" + std::to_string(kSamplePage));
        }
        sleepMs(kWatchWindowMs);
        if (readers) {
          readers->stop();
          viewers->stop();
          watched_readers.merge(readers->total());
          watched_viewers.merge(viewers->total());
        }
        run = requestJson(port, "GET", base);
        if (isFinal(run.value("state", ""))) break;
        watching = !watching;
      }
      run = waitForEnd(port, watched.id, run_timeout_s, 1000);
      cpu_watched = meter.read();
      const int64_t id = watched.id;
      watched = figuresOf(run);
      watched.id = id;
      alternation = compareWindows(port, watched.id, watch_windows);
    }
    progress("  readers: %s", readersLine(watched_readers).c_str());
    progress("  viewers: %s", problems(watched_viewers).c_str());

    // 1b. Loaded: a run recording, viewers replaying the long run, readers of its first page.
    progress(
        "1b: a recording run + %d viewers of run 1's stream + %d readers of its first page "
        "+ %d load clients for %d s",
        options.viewers, options.load_readers, options.load_clients, options.window_s);
    under_load.id = submitRun(port, scenario);
    {
      waitForRecording(port, under_load.id, 120);
      ClientGroup<RouteStats> readers;
      ClientGroup<StreamStats> viewers;
      addViewers(viewers, port, options.viewers, "/v1/runs/1/stream", true);
      addReaders(readers, port, options.load_readers,
                 "/v1/runs/1/samples?limit=" + std::to_string(kSamplePage));
      const CpuMeter meter(serve.pid());
      sleepMs(2000);  // the background in full swing (and holding its connections) first
      checkInterrupted();
      loaded = runLoad(port, options.load_clients, options.window_s, load_targets);
      readers.stop();
      viewers.stop();
      cpu_loaded = meter.read();
      loaded_readers = readers.total();
      loaded_viewers = viewers.total();
    }
    progress("  healthz %s ms, run %s ms", p50p99(loaded.routes[0].latencies_ms).c_str(),
             p50p99(loaded.routes[1].latencies_ms).c_str());
    progress("  readers of run 1: %s", readersLine(loaded_readers).c_str());
    progress("  viewers of run 1: %s", problems(loaded_viewers).c_str());
    {
      const json run = waitForEnd(port, under_load.id, run_timeout_s, 1000);
      const int64_t id = under_load.id;
      under_load = figuresOf(run);
      under_load.id = id;
    }

    // 3. The workload's peak rate, read back from the recorded runs.
    progress("3: reading back the recorded runs' samples");
    for (RunFigures* run : {&unwatched, &watched, &under_load}) measurePeakRate(port, run);
  } catch (const std::exception& e) {  // a Failure, or an answer without the expected fields
    failure = e.what();
  }
  if (port > 0 && !serve.alive()) {
    failure += (failure.empty() ? "" : "; ") + std::string("serve died during the bench");
  }
  // serve's lab, while serve still holds it: none was up before serve started (checked above).
  const std::vector<NetnsIdentity> our_lab = labNamespaceIdentities();
  progress("stopping serve (SIGINT)");
  stage = nowNs();
  serve_exit = serve.stop();
  progress("serve: %s after %.1f s", serve_exit.c_str(), msSince(stage) / 1000);
  const std::string serve_log = serve.log();

  // Whatever serve left: its lab's namespaces, processes naming our directory.
  std::vector<std::string> leftovers;
  for (const NetnsIdentity& ns : our_lab) {
    if (!stillThere(ns)) continue;
    leftovers.push_back("namespace " + ns.name + " (removed)");
    std::istringstream pids(shell("ip netns pids " + ns.name + " 2>/dev/null"));
    for (pid_t pid; pids >> pid;) ::kill(pid, SIGKILL);
    shell("ip netns del " + ns.name + " 2>/dev/null");
  }
  for (int tries = 0; tries < 50 && !processesNaming(dir).empty(); ++tries) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  for (const pid_t pid : processesNaming(dir)) {
    leftovers.push_back("process " + std::to_string(pid) + " (killed)");
    ::kill(pid, SIGKILL);
  }

  // serve's own complaints, for the report.
  std::vector<std::string> serve_errors;
  {
    std::istringstream lines(serve_log);
    for (std::string line; std::getline(lines, line);) {
      const std::string l = lower(line);
      if (l.find("error") != std::string::npos || l.find("fail") != std::string::npos ||
          l.find("warn") != std::string::npos) {
        serve_errors.push_back(line);
      }
    }
  }
  if (!serve_errors.empty()) {
    progress("serve logged %zu error/warning lines, the first ones:", serve_errors.size());
    for (size_t i = 0; i < std::min<size_t>(10, serve_errors.size()); ++i) {
      std::fprintf(stderr, "  | %s\n", serve_errors[i].c_str());
    }
  }
  if (!failure.empty()) {
    const size_t tail = serve_log.size() > 4000 ? serve_log.size() - 4000 : 0;
    std::fprintf(stderr, "api_load_bench: FAILED: %s\nserve's log (tail):\n%s\n", failure.c_str(),
                 serve_log.substr(tail).c_str());
    for (const auto& l : leftovers)
      std::fprintf(stderr, "api_load_bench: left over: %s\n", l.c_str());
    return 1;
  }

  // 3. The store as the engine writes it, serve gone (a quiet machine).
  double peak = 0;
  for (const RunFigures* run : {&unwatched, &watched, &under_load}) {
    peak = std::max(peak, run->peak_samples_per_s);
  }
  const int flush_batch = std::max(1, static_cast<int>(std::ceil(peak / kRanks * kFlushMs / 1000)));
  progress(
      "3: %d appendSamples of %d samples into fresh databases, one at a time and %d ranks at once",
      kIngestBatches, flush_batch, kRanks);
  const IngestFigures one_at_a_time = measureIngest(dir + "/ingest-serial.db", flush_batch, false);
  const IngestFigures ingest = measureIngest(dir + "/ingest-ranks.db", flush_batch, true);
  const double total_s = msSince(bench_start) / 1000;

  // The report.
  const char* names[2] = {"healthz", "GET /v1/runs/1"};
  std::printf(
      "api_load_bench: serve --with-lab 4 on a 2-core machine, run 1 = %d x %lld seeded "
      "samples; %d load clients, %d viewers, %d sample readers of the watched run, %d of run 1 "
      "under load, %d s windows\n",
      kRanks, static_cast<long long>(kLongRunIterations), options.load_clients, options.viewers,
      options.sample_readers, options.load_readers, options.window_s);
  std::printf("1. load (p50/p99 ms)\n");
  for (int r = 0; r < 2; ++r) {
    std::printf("  %-16s idle %-12s loaded %-12s p99 ratio %.2f\n", names[r],
                p50p99(idle.routes[r].latencies_ms).c_str(),
                p50p99(loaded.routes[r].latencies_ms).c_str(),
                ratio(percentile(loaded.routes[r].latencies_ms, 0.99),
                      percentile(idle.routes[r].latencies_ms, 0.99)));
    std::printf("    idle: %s; loaded: %s\n", problems(idle.routes[r]).c_str(),
                problems(loaded.routes[r]).c_str());
  }
  std::printf("  load clients never let in (every connection refused): idle %d, loaded %d of %d\n",
              idle.never_admitted, loaded.never_admitted, options.load_clients);
  std::printf("  readers of run 1's first page: %s\n", readersLine(loaded_readers).c_str());
  std::printf("  viewers of run 1's stream: %s\n", problems(loaded_viewers).c_str());
  std::printf("  the recording run %lld: %s, baseline busbw %.3f GB/s\n",
              static_cast<long long>(under_load.id), under_load.state.c_str(),
              under_load.baseline_busbw_gbps);
  std::printf("2. measurement integrity (baseline busbw, %d ms baseline)\n", options.baseline_ms);
  for (const RunFigures* run : {&unwatched, &watched}) {
    std::printf("  %-9s run %lld: %s, %.4f GB/s over %lld baseline iterations%s%s\n",
                run == &unwatched ? "unwatched" : "watched", static_cast<long long>(run->id),
                run->state.c_str(), run->baseline_busbw_gbps,
                static_cast<long long>(run->baseline_iterations),
                run->error.empty() ? "" : ", error: ", run->error.c_str());
  }
  std::printf(
      "  watched run, alternating: %d windows watched (%lld samples), %d unwatched "
      "(%lld samples): median busbw %.4f vs %.4f GB/s\n",
      alternation.windows_watched, static_cast<long long>(alternation.samples_watched),
      alternation.windows_unwatched, static_cast<long long>(alternation.samples_unwatched),
      alternation.median_watched_gbps, alternation.median_unwatched_gbps);
  std::printf("  watchers' readers: %s\n", readersLine(watched_readers).c_str());
  std::printf("  watchers' viewers: %s\n", problems(watched_viewers).c_str());
  std::printf("3. ingest\n");
  for (const RunFigures* run : {&unwatched, &watched, &under_load}) {
    std::printf("  run %lld: %lld samples, peak %.0f samples/s (1-s windows, all ranks)\n",
                static_cast<long long>(run->id), static_cast<long long>(run->samples),
                run->peak_samples_per_s);
  }
  for (const IngestFigures* f : {&one_at_a_time, &ingest}) {
    std::printf(
        "  store, %s: %d appends of %d samples (one rank's %g ms flush at the peak): "
        "%.0f samples/s, append p50/p99 %.2f/%.2f ms\n",
        f == &ingest ? "4 ranks at once" : "one at a time", kIngestBatches, f->batch, kFlushMs,
        f->samples_per_s, f->append_p50_ms, f->append_p99_ms);
  }
  std::printf("CPU seconds used (%ld cores):\n", ::sysconf(_SC_NPROCESSORS_ONLN));
  for (const auto& [name, cpu] :
       {std::pair<const char*, const CpuWindow*>{"1a idle load", &cpu_idle},
        {"2 unwatched run", &cpu_unwatched},
        {"2 watched run", &cpu_watched},
        {"1b loaded", &cpu_loaded}}) {
    std::printf(
        "  %-16s over %5.1f s: bench's clients %5.1f, serve %5.1f (with its ranks %5.1f), "
        "other processes %5.1f\n",
        name, cpu->wall_s, cpu->bench_s, cpu->serve_s, cpu->serve_tree_s, cpu->others_s);
  }
  std::printf("serve: %s; %zu error/warning lines in its log; left over: %s; bench took %.0f s\n",
              serve_exit.c_str(), serve_errors.size(),
              leftovers.empty() ? "nothing" : leftovers.front().c_str(), total_s);
  std::printf("\n");
  for (int r = 0; r < 2; ++r) {
    std::printf(
        "api_load_bench: %s p50/p99 idle %s ms, loaded %s ms: p99 ratio %.2f "
        "(target <= 3)\n",
        names[r], p50p99(idle.routes[r].latencies_ms).c_str(),
        p50p99(loaded.routes[r].latencies_ms).c_str(),
        ratio(percentile(loaded.routes[r].latencies_ms, 0.99),
              percentile(idle.routes[r].latencies_ms, 0.99)));
  }
  const int64_t refused = loaded.routes[0].refused + loaded.routes[1].refused +
                          loaded_readers.refused + loaded_viewers.refused;
  const int64_t failed = loaded.routes[0].failed + loaded.routes[1].failed + loaded_readers.failed +
                         loaded_viewers.failed;
  std::printf(
      "api_load_bench: loaded: %lld requests refused 503, %lld failed; %d of %d load "
      "clients never let in\n",
      static_cast<long long>(refused), static_cast<long long>(failed), loaded.never_admitted,
      options.load_clients);
  std::printf(
      "api_load_bench: busbw in one run, watched vs unwatched %d ms windows: median %.4f vs %.4f "
      "GB/s: ratio %.3f (target >= 0.97); between runs (baseline, unwatched run %lld vs watched "
      "run %lld): %.4f vs %.4f GB/s, ratio %.3f\n",
      kWatchWindowMs, alternation.median_watched_gbps, alternation.median_unwatched_gbps,
      ratio(alternation.median_watched_gbps, alternation.median_unwatched_gbps),
      static_cast<long long>(unwatched.id), static_cast<long long>(watched.id),
      unwatched.baseline_busbw_gbps, watched.baseline_busbw_gbps,
      ratio(watched.baseline_busbw_gbps, unwatched.baseline_busbw_gbps));
  std::printf(
      "api_load_bench: ingest: workload peak %.0f samples/s, store %.0f samples/s in "
      "%d-sample flushes from %d ranks at once (%.0f one at a time): ratio %.1f (target >= 10)\n",
      peak, ingest.samples_per_s, ingest.batch, kRanks, one_at_a_time.samples_per_s,
      ratio(ingest.samples_per_s, peak));
  std::printf(
      "api_load_bench: CPU-s of processes not this bench's (another session's build or tests): "
      "idle %.1f, unwatched %.1f, watched %.1f, loaded %.1f\n",
      cpu_idle.others_s, cpu_unwatched.others_s, cpu_watched.others_s, cpu_loaded.others_s);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  struct sigaction action {};
  action.sa_handler = onSignal;
  ::sigemptyset(&action.sa_mask);
  ::sigaction(SIGINT, &action, nullptr);
  ::sigaction(SIGTERM, &action, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  std::setvbuf(stdout, nullptr, _IOLBF, 0);

  Options options;
  try {
    options = parseOptions(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "api_load_bench: %s\n", e.what());
    return 2;
  }
  char dir_template[] = "/tmp/fc-api-load-bench-XXXXXX";
  if (::mkdtemp(dir_template) == nullptr) {
    std::fprintf(stderr, "api_load_bench: mkdtemp: %s\n", std::strerror(errno));
    return 1;
  }
  const std::string dir = dir_template;
  int code = 1;
  try {
    code = runBench(options, dir);
  } catch (const std::exception& e) {  // before serve started (seeding), or a bug
    std::fprintf(stderr, "api_load_bench: FAILED: %s\n", e.what());
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return code;
}
