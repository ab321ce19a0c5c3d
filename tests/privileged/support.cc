#include "tests/privileged/support.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

namespace fabric_chaos::testing {

namespace {

std::string missingBinary() {
  const char* binary = std::getenv("FC_BINARY");
  if (binary == nullptr || !std::filesystem::exists(binary)) {
    return "FC_BINARY must point at the built fabric-chaos binary (ctest sets it)";
  }
  return "";
}

}  // namespace

std::string missingPrivilegedPrerequisite() {
  if (geteuid() != 0) return "the privileged tier needs root (network namespaces)";
  if (!std::filesystem::exists("/proc/self/ns/net")) return "no network namespace support";
  if (runShell("command -v ip >/dev/null && command -v nft >/dev/null").exit_code != 0) {
    return "iproute2 (ip) and nftables (nft) must be installed";
  }
  return missingBinary();
}

CommandOutput runShell(const std::string& command) {
  CommandOutput result;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) result.out.append(buffer, n);
  int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

nlohmann::json HttpReply::json() const {
  return nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
}

namespace {

std::string& defaultBearerTokenStorage() {
  static std::string token;  // function-local: no global constructor
  return token;
}

}  // namespace

void setDefaultBearerToken(const std::string& token) { defaultBearerTokenStorage() = token; }

const std::string& defaultBearerToken() { return defaultBearerTokenStorage(); }

HttpReply httpRequest(int port, const std::string& method, const std::string& target,
                      const std::string& body) {
  const std::string& token = defaultBearerToken();
  return httpRequestWithAuthorization(port, method, target, body,
                                      token.empty() ? "" : "Bearer " + token);
}

HttpReply httpRequestWithAuthorization(int port, const std::string& method,
                                       const std::string& target, const std::string& body,
                                       const std::string& authorization) {
  HttpReply reply;
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    reply.body = std::string("(no reply: connect: ") + std::strerror(errno) + ")";
    close(fd);
    return reply;
  }
  std::string request = method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" +
                        "Connection: close\r\nContent-Type: application/json\r\n" +
                        (authorization.empty() ? "" : "Authorization: " + authorization + "\r\n") +
                        "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  size_t sent = 0;
  while (sent < request.size()) {
    ssize_t n = send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
  std::string raw;
  char buffer[65536];
  ssize_t n;
  while ((n = recv(fd, buffer, sizeof(buffer), 0)) > 0) raw.append(buffer, static_cast<size_t>(n));
  const int recv_errno = n < 0 ? errno : 0;
  close(fd);
  auto header_end = raw.find("\r\n\r\n");
  if (raw.size() < 12 || header_end == std::string::npos) {
    // Status 0: say what the transport saw, so that a flaky failure can be told apart.
    reply.body = "(no reply after sending " + std::to_string(sent) + " of " +
                 std::to_string(request.size()) + " bytes: " +
                 (recv_errno != 0 ? std::string("recv: ") + std::strerror(recv_errno)
                                  : std::string("the server closed the connection")) +
                 " after " + std::to_string(raw.size()) + " bytes)";
    return reply;
  }
  reply.status = std::atoi(raw.substr(9, 3).c_str());
  std::istringstream headers(raw.substr(0, header_end));
  for (std::string line; std::getline(headers, line);) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (name != "content-type") continue;
    const size_t value = line.find_first_not_of(' ', colon + 1);
    reply.content_type = value == std::string::npos ? "" : line.substr(value);
    while (!reply.content_type.empty() &&
           (reply.content_type.back() == '\r' || reply.content_type.back() == ' ')) {
      reply.content_type.pop_back();
    }
  }
  reply.body = raw.substr(header_end + 4);
  return reply;
}

int64_t steadyNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

ChildProcess::ChildProcess(std::vector<std::string> args) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return;
  pid_ = fork();
  if (pid_ == 0) {
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(fds[1]);
  stdout_fd_ = fds[0];
  reader_ = std::thread([this] {
    char buffer[4096];
    ssize_t n;
    while ((n = read(stdout_fd_, buffer, sizeof(buffer))) > 0) {
      std::lock_guard lock(mu_);
      output_.append(buffer, static_cast<size_t>(n));
    }
  });
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  if (reader_.joinable()) reader_.join();
  if (stdout_fd_ >= 0) close(stdout_fd_);
}

int ChildProcess::waitForPort(const std::regex& pattern, int timeout_ms, int poll_ms) {
  const int64_t deadline = steadyNowNs() + int64_t{timeout_ms} * 1000000;
  while (steadyNowNs() < deadline) {
    std::smatch match;
    std::string out = output();
    if (std::regex_search(out, match, pattern)) return std::stoi(match[1]);
    int status;
    if (pid_ > 0 && waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return 0;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(poll_ms));
  }
  return 0;
}

int ChildProcess::signalAndWait(int signo, int timeout_ms, bool kill_on_timeout) {
  if (pid_ <= 0) return -1;
  ::kill(pid_, signo);
  const int64_t deadline = steadyNowNs() + int64_t{timeout_ms} * 1000000;
  int status = 0;
  while (waitpid(pid_, &status, WNOHANG) == 0) {
    if (steadyNowNs() > deadline) {
      if (!kill_on_timeout) return -1;
      ::kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return reaped(status);
}

void ChildProcess::killAndReap(int signo) {
  if (pid_ <= 0) return;
  ::kill(pid_, signo);
  int status = 0;
  waitpid(pid_, &status, 0);
  reaped(status);
}

int ChildProcess::reaped(int status) {
  pid_ = -1;
  if (reader_.joinable()) reader_.join();
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string ChildProcess::output() {
  std::lock_guard lock(mu_);
  return output_;
}

namespace {

std::vector<std::string> serveArgs(const std::vector<std::string>& extra_args,
                                   const std::string& dir) {
  std::vector<std::string> args{std::getenv("FC_BINARY"),
                                "serve",
                                "--listen",
                                "127.0.0.1:0",
                                "--db",
                                dir + "/fc.db",
                                "--state-dir",
                                dir + "/state",
                                "--admin-token-file",
                                dir + "/admin.token"};
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  return args;
}

// The first line of the token file, or "" when there is none.
std::string readTokenFile(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
  return line;
}

}  // namespace

ServeProcess::ServeProcess(const std::vector<std::string>& extra_args, const std::string& dir)
    : token_file_(dir + "/admin.token"), child_(serveArgs(extra_args, dir)) {}

ServeProcess::~ServeProcess() {
  if (child_.running()) stop(20000);
}

int ServeProcess::waitForPort(int timeout_ms) {
  static const std::regex kServing(R"(serving on http://127\.0\.0\.1:(\d+))");
  const int port = child_.waitForPort(kServing, timeout_ms, 50);
  // serve writes the token file before it listens, so it is complete by now.
  const bool auth_off = child_.output().find("authentication is OFF") != std::string::npos;
  token_ = port > 0 && !auth_off ? readTokenFile(token_file_) : "";
  setDefaultBearerToken(token_);
  return port;
}

int ServeProcess::stop(int timeout_ms) { return child_.signalAndWait(SIGINT, timeout_ms, true); }

void ServeProcess::kill(int signo) { child_.killAndReap(signo); }

std::string ServeProcess::output() { return child_.output(); }

LinkObserver::LinkObserver(std::string netns, std::string ifname, int period_ms)
    : netns_(std::move(netns)), ifname_(std::move(ifname)), period_ms_(period_ms) {
  thread_ = std::thread([this] {
    int last = -1;
    while (!stopping_) {
      // `ip -o link show` prints the flags as <BROADCAST,MULTICAST,UP,LOWER_UP>.
      auto out = runShell("ip -n " + netns_ + " -o link show dev " + ifname_ + " 2>/dev/null");
      const int64_t t = steadyNowNs();
      if (out.exit_code == 0) {
        auto open = out.out.find('<');
        auto close = out.out.find('>');
        std::string flags = "," + out.out.substr(open + 1, close - open - 1) + ",";
        int up = flags.find(",UP,") != std::string::npos ? 1 : 0;
        if (up != last) changes_.push_back({t, up == 1});
        last = up;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(period_ms_));
    }
  });
}

LinkObserver::~LinkObserver() { stop(); }

std::vector<LinkObserver::Change> LinkObserver::stop() {
  stopping_ = true;
  if (thread_.joinable()) thread_.join();
  return changes_;
}

bool lossFaultInForce(const std::string& netns, const std::string& port) {
  // The table name the nftables backend uses: fc_loss_ + the name with anything but [A-Za-z0-9]
  // as '_' (injectors/loss/packet_loss.cc, nftLossTableName).
  std::string table = "fc_loss_";
  for (char c : port) table += std::isalnum(static_cast<unsigned char>(c)) != 0 ? c : '_';
  if (runShell("ip netns exec " + netns + " nft list table netdev " + table + " >/dev/null 2>&1")
          .exit_code == 0) {
    return true;
  }
  auto qdiscs = runShell("tc -n " + netns + " qdisc show dev " + port + " 2>/dev/null");
  return qdiscs.exit_code == 0 && qdiscs.out.find("netem") != std::string::npos;
}

std::string lossFaultsIn(const std::string& netns) {
  std::string found;
  auto add = [&found](const std::string& what) { found += (found.empty() ? "" : "; ") + what; };
  auto tables = runShell("ip netns exec " + netns + " nft list tables 2>&1");
  if (tables.exit_code != 0) add("nft list tables failed: " + tables.out);
  auto qdiscs = runShell("tc -n " + netns + " qdisc show 2>&1");
  if (qdiscs.exit_code != 0) add("tc qdisc show failed: " + qdiscs.out);
  for (const std::string* text : {&tables.out, &qdiscs.out}) {
    std::istringstream lines(*text);
    for (std::string line; std::getline(lines, line);) {
      if (line.find("fc_loss") != std::string::npos || line.find("netem") != std::string::npos) {
        add(netns + ": " + line);
      }
    }
  }
  return found;
}

std::vector<std::string> namespacesWithPrefix(const std::string& prefix) {
  std::vector<std::string> names;
  std::istringstream lines(runShell("ip netns list").out);
  std::string line;
  while (std::getline(lines, line)) {
    std::string name = line.substr(0, line.find(' '));
    if (name.rfind(prefix, 0) == 0) names.push_back(name);
  }
  return names;
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::vector<int> guardiansOf(const std::string& dir) {
  std::vector<int> pids;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    if (readFile(entry.path().string() + "/comm") != "fc-guardian\n") continue;
    const std::string stat = readFile(entry.path().string() + "/stat");
    const auto close = stat.rfind(')');
    if (close == std::string::npos || close + 2 >= stat.size() || stat[close + 2] == 'Z') continue;
    if (readFile(entry.path().string() + "/cmdline").find(dir) == std::string::npos) continue;
    pids.push_back(std::stoi(name));
  }
  return pids;
}

std::string makeTempDir() {
  char tmpl[] = "/tmp/fc-test-XXXXXX";
  char* dir = mkdtemp(tmpl);
  return dir == nullptr ? "" : dir;
}

nlohmann::json qdiscStats(const std::string& netns, const std::string& port,
                          const std::string& handle) {
  const CommandOutput out = runShell("tc -n " + netns + " -s -j qdisc show dev " + port);
  const nlohmann::json doc = nlohmann::json::parse(out.out, nullptr, false);
  if (doc.is_array()) {
    for (const auto& entry : doc) {
      if (entry.value("handle", "") == handle) return entry;
    }
  }
  return nlohmann::json();
}

int64_t htbClassBytes(const std::string& netns, const std::string& port,
                      const std::string& classid) {
  const std::string out = runShell("tc -n " + netns + " -s class show dev " + port).out;
  const std::regex sent("class htb " + classid + " [^\\n]*\\n Sent (\\d+) bytes");
  std::smatch match;
  if (!std::regex_search(out, match, sent)) return -1;
  return std::stoll(match[1].str());
}

int64_t startRun(int port, const nlohmann::json& scenario) {
  auto reply = httpRequest(port, "POST", "/v1/runs", nlohmann::json{{"scenario", scenario}}.dump());
  EXPECT_EQ(reply.status, 202) << reply.body;
  return reply.json().value("id", int64_t{0});
}

nlohmann::json waitForFinalRun(int port, int64_t id, int timeout_s) {
  const int64_t deadline = steadyNowNs() + int64_t{timeout_s} * 1000000000;
  nlohmann::json run;
  while (steadyNowNs() < deadline) {
    const HttpReply reply = httpRequest(port, "GET", "/v1/runs/" + std::to_string(id));
    run = reply.json();
    if (!run.is_object()) {
      // Seen twice in CI under load: serve answered with a body that is not JSON. Poll again,
      // and say so, so that the reply is on record for whoever looks into it.
      std::fprintf(stderr, "waitForFinalRun: GET /v1/runs/%lld gave status %d, body '%.200s'\n",
                   static_cast<long long>(id), reply.status, reply.body.c_str());
      run = nlohmann::json::object();
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      continue;
    }
    const std::string state = run.value("state", "");
    if (state == "passed" || state == "failed" || state == "error" || state == "aborted" ||
        state == "interrupted") {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return run;
}

std::vector<nlohmann::json> eventsOfKind(const nlohmann::json& events, const std::string& kind) {
  std::vector<nlohmann::json> out;
  for (const auto& e : events) {
    if (e.value("kind", "") == kind) out.push_back(e);
  }
  return out;
}

void BinaryProcessTest::SetUp() {
  const std::string missing = missingBinary();
  if (!missing.empty()) {
    const char* ci = std::getenv("CI");
    if (ci != nullptr && std::string(ci) == "true") FAIL() << missing;
    GTEST_SKIP() << missing;
  }
  binary_ = std::getenv("FC_BINARY");
  dir_ = makeTempDir();
  ASSERT_FALSE(dir_.empty());
}

void BinaryProcessTest::TearDown() {
  std::error_code ec;
  if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
}

void ServeWithLabTest::SetUp() {
  FC_REQUIRE_ROOT();
  dir_ = makeTempDir();
  ASSERT_FALSE(dir_.empty());
  std::vector<std::string> args = {"--with-lab", std::to_string(hosts_)};
  args.insert(args.end(), extra_args_.begin(), extra_args_.end());
  serve_ = std::make_unique<ServeProcess>(args, dir_);
  port_ = serve_->waitForPort(60000);
  ASSERT_GT(port_, 0) << "serve did not start:\n" << serve_->output();
}

void ServeWithLabTest::TearDown() {
  if (serve_) {
    EXPECT_EQ(serve_->stop(30000), 0) << serve_->output();
    // Ctrl-C removed the lab: no namespace (and so no veth, qdisc or nft table) is left.
    EXPECT_TRUE(namespacesWithPrefix("fcl-").empty()) << runShell("ip netns list").out;
  }
  if (!dir_.empty()) std::filesystem::remove_all(dir_);
}

void OwnLabTest::SetUp() {
  FC_REQUIRE_ROOT();
  ASSERT_TRUE(namespacesWithPrefix("fcl-").empty())
      << "another lab is up (fcl-* namespaces exist); this test brings up its own";
  dir_ = makeTempDir();
  ASSERT_FALSE(dir_.empty());
  binary_ = std::getenv("FC_BINARY");  // checked by FC_REQUIRE_ROOT
  auto up = runShell(binary_ + " lab up --hosts 2 --state-dir " + dir_ + "/state 2>&1");
  ASSERT_EQ(up.exit_code, 0) << up.out;
}

void OwnLabTest::TearDown() {
  if (!dir_.empty()) {
    runShell(binary_ + " lab down --state-dir " + dir_ + "/state >/dev/null 2>&1");
    EXPECT_TRUE(namespacesWithPrefix("fcl-").empty());
    std::filesystem::remove_all(dir_);
  }
}

double timingScale() {
  const char* text = std::getenv("FC_TIMING_SCALE");
  if (text == nullptr || *text == '\0') return 1;
  const double scale = std::atof(text);
  return scale >= 1 ? scale : 1;
}

bool waitFor(const std::function<bool()>& condition, int timeout_ms) {
  const int64_t deadline = steadyNowNs() + int64_t{timeout_ms} * 1000000;
  while (steadyNowNs() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return condition();
}

bool adminUp(const std::string& netns, const std::string& ifname) {
  auto out = runShell("ip -n " + netns + " -o link show dev " + ifname);
  const auto open = out.out.find('<');
  const auto close = out.out.find('>');
  if (out.exit_code != 0 || open == std::string::npos || close == std::string::npos) return false;
  return ("," + out.out.substr(open + 1, close - open - 1) + ",").find(",UP,") != std::string::npos;
}

void RestartableServeTest::SetUp() {
  FC_REQUIRE_ROOT();
  dir_ = makeTempDir();
}

void RestartableServeTest::TearDown() {
  serve_.reset();
  if (const char* binary = std::getenv("FC_BINARY"); binary != nullptr && !dir_.empty()) {
    runShell(std::string(binary) + " lab down --state-dir " + dir_ + "/state >/dev/null 2>&1");
  }
  EXPECT_TRUE(namespacesWithPrefix("fcl-").empty());
  if (!dir_.empty()) std::filesystem::remove_all(dir_);
}

int RestartableServeTest::start() {
  serve_ = std::make_unique<ServeProcess>(std::vector<std::string>{"--with-lab", "4"}, dir_);
  return serve_->waitForPort(60000);
}

int64_t linkTxBytes(const std::string& netns, const std::string& ifname) {
  const CommandOutput out = runShell("ip -n " + netns + " -s -j link show dev " + ifname);
  const nlohmann::json doc = nlohmann::json::parse(out.out, nullptr, false);
  if (out.exit_code != 0 || !doc.is_array() || doc.empty()) return -1;
  return doc[0]["stats64"]["tx"]["bytes"].get<int64_t>();
}

std::string firstUpIpv4Address() {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return "";
  std::string found;
  for (ifaddrs* i = list; i != nullptr && found.empty(); i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
    if ((i->ifa_flags & IFF_UP) == 0 || (i->ifa_flags & IFF_LOOPBACK) != 0) continue;
    char text[INET_ADDRSTRLEN];
    ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr, text,
                sizeof(text));
    found = text;
  }
  ::freeifaddrs(list);
  return found;
}

}  // namespace fabric_chaos::testing
