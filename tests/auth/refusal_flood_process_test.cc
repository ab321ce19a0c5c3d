// The real `fabric-chaos serve` under a flood of unauthenticated requests: 10,000 requests with a
// bad token from 20 loopback source addresses (127.0.0.10-29, each client socket bound to one),
// four connections at a time, while a probe asks /healthz every 5 ms. The database is read with
// the sqlite3 tool: at most 100 new audit rows, and after serve stops, the rows account for every
// refused request (each source's first row plus its summaries' counts). /healthz's p99 during the
// flood stays within 50 ms. Loopback only; label deploy, because it times (not a unit test).

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "tests/privileged/support.h"

namespace fabric_chaos::auth {
namespace {

using fabric_chaos::testing::runShell;

constexpr int kRequests = 10000;
constexpr int kSources = 20;
constexpr int kFloodThreads = 4;

// One request on its own connection from source_ip; the HTTP status, 0 when none came back.
int requestFrom(const std::string& source_ip, int port, const std::string& request) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  sockaddr_in local{};
  local.sin_family = AF_INET;
  ::inet_pton(AF_INET, source_ip.c_str(), &local.sin_addr);
  sockaddr_in remote{};
  remote.sin_family = AF_INET;
  remote.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, "127.0.0.1", &remote.sin_addr);
  int status = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof local) == 0 &&
      ::connect(fd, reinterpret_cast<sockaddr*>(&remote), sizeof remote) == 0 &&
      ::send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
          static_cast<ssize_t>(request.size())) {
    char buffer[512];
    const ssize_t got = ::recv(fd, buffer, sizeof buffer - 1, 0);
    if (got > 12) {
      buffer[got] = '\0';
      std::sscanf(buffer, "HTTP/1.%*d %d", &status);
    }
  }
  ::close(fd);
  return status;
}

int64_t sqliteNumber(const std::string& db, const std::string& query) {
  auto out = runShell("sqlite3 -readonly '" + db + "' \"" + query + "\" 2>&1");
  try {
    return out.exit_code == 0 ? std::stoll(out.out) : -1;
  } catch (const std::exception&) {
    return -1;
  }
}

class RefusalFlood : public fabric_chaos::testing::BinaryProcessTest {};

TEST_F(RefusalFlood, TenThousandBadTokensAddAtMostAHundredRowsAndHealthzStaysFast) {
  ASSERT_EQ(runShell("command -v sqlite3 >/dev/null").exit_code, 0) << "sqlite3 is needed";
  const std::string db = dir_ + "/fc.db";
  int64_t rows_before = 0;
  std::vector<double> healthz_ms;
  int answered_401 = 0, answered_429 = 0, other = 0;
  double flood_s = 0;
  {
    fabric_chaos::testing::ServeProcess serve({}, dir_);
    const int port = serve.waitForPort(60000);
    ASSERT_GT(port, 0) << serve.output();
    rows_before = sqliteNumber(db, "SELECT COUNT(*) FROM audit");
    ASSERT_GE(rows_before, 0);

    const std::string bad = "GET /v1/runs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer fct_" +
                            std::string(64, '7') + "\r\nConnection: close\r\n\r\n";
    std::atomic<int> next{0};
    std::atomic<int> counts[3] = {0, 0, 0};
    std::atomic<bool> flooding{true};
    std::thread probe([&] {
      const std::string health = "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
      while (flooding) {
        const auto start = std::chrono::steady_clock::now();
        const int status = requestFrom("127.0.0.1", port, health);
        const double ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                .count();
        if (status == 200) healthz_ms.push_back(ms);
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    });
    const auto flood_start = std::chrono::steady_clock::now();
    std::vector<std::thread> flood;
    for (int t = 0; t < kFloodThreads; ++t) {
      flood.emplace_back([&] {
        for (int i = next++; i < kRequests; i = next++) {
          const std::string source = "127.0.0." + std::to_string(10 + i % kSources);
          const int status = requestFrom(source, port, bad);
          ++counts[status == 401 ? 0 : status == 429 ? 1 : 2];
        }
      });
    }
    for (auto& thread : flood) thread.join();
    flood_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - flood_start).count();
    flooding = false;
    probe.join();
    answered_401 = counts[0];
    answered_429 = counts[1];
    other = counts[2];

    const int64_t rows_during = sqliteNumber(db, "SELECT COUNT(*) FROM audit") - rows_before;
    std::printf(
        "flood: %d requests in %.2f s from %d sources: %d x 401, %d x 429, %d other; %lld "
        "new audit rows while serving\n",
        kRequests, flood_s, kSources, answered_401, answered_429, other,
        static_cast<long long>(rows_during));
    EXPECT_LE(rows_during, 100);
    EXPECT_EQ(serve.stop(30000), 0) << serve.output();
  }
  EXPECT_EQ(other, 0) << "every flood request was answered 401 or 429";
  EXPECT_GT(answered_429, 0) << "sources past the limit are throttled";

  // After the stop: the summaries of the open windows are written, and every refusal is counted.
  const int64_t rows_after = sqliteNumber(db, "SELECT COUNT(*) FROM audit") - rows_before;
  const int64_t accounted = sqliteNumber(
      db,
      "SELECT COALESCE(SUM(CASE WHEN json_extract(detail, '$.coalesced') IS NULL THEN 1 ELSE "
      "json_extract(detail, '$.coalesced') + json_extract(detail, '$.throttled') END), 0) FROM "
      "audit WHERE actor = 'anonymous' AND json_extract(detail, '$.source') LIKE '127.0.0.%'");
  std::printf("after serve stopped: %lld new audit rows accounting for %lld refused requests\n",
              static_cast<long long>(rows_after), static_cast<long long>(accounted));
  EXPECT_LE(rows_after, 100);
  EXPECT_EQ(accounted, kRequests);

  ASSERT_GT(healthz_ms.size(), 10u);
  std::sort(healthz_ms.begin(), healthz_ms.end());
  const double p50 = healthz_ms[healthz_ms.size() / 2];
  const double p99 = healthz_ms[std::min(healthz_ms.size() - 1, healthz_ms.size() * 99 / 100)];
  std::printf("/healthz during the flood: %zu probes, p50 %.2f ms, p99 %.2f ms\n",
              healthz_ms.size(), p50, p99);
  EXPECT_LE(p99, 50.0);
}

}  // namespace
}  // namespace fabric_chaos::auth
