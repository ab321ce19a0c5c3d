// RemoteAgent against a real http::Server running an AgentService on 127.0.0.1 (ephemeral port),
// in this process: the fault round trip over HTTP, lease renewal and expiry, recovery by
// description, errors, and a workload whose rank is a shell script, with its reports mapped back
// to the controller's timeline. Also the pure clock-offset estimator and the URL parser.

#include "agent/remote_agent.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "agent/agent_service.h"
#include "agent/local_agent.h"
#include "core/clock.h"
#include "injectors/registry.h"
#include "injectors/sys/process.h"
#include "net/http_client.h"
#include "server/http/server.h"
#include "tests/agent/agent_test_support.h"
#include "workload/report.h"

namespace fabric_chaos::agent {
namespace {

using nlohmann::json;
using testing::fakeFault;
using testing::FixedHostProbe;
using testing::RecordingInjector;
using testing::RecordingListener;

constexpr char kToken[] = "remote-test-token-0123456789";

// Each test's directories: fc_remote_XXXXXX under the temp dir.
struct TempDir : testing::TempDir {
  TempDir() : testing::TempDir("fc_remote") {}
};

bool waitUntil(int timeout_ms, const std::function<bool()>& condition) {
  const int64_t deadline = core::steadyNowNs() + int64_t{timeout_ms} * 1000000;
  while (core::steadyNowNs() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return condition();
}

// An agent served over loopback HTTP, as `fabric-chaos agent` would serve it.
class AgentOverHttp : public ::testing::Test {
 protected:
  void SetUp() override {
    auto injector = std::make_unique<RecordingInjector>();
    injector_ = injector.get();
    registry_.add(std::move(injector));
    launcher_ = sys::makeForkExecLauncher();
    script_ = dir_.path() + "/fake-workload";
    writeScript("exit 0\n");
    local_ = std::make_unique<LocalAgent>(registry_, *launcher_, LocalAgentOptions{script_, ""});
    AgentServiceOptions options;
    options.token = kToken;
    options.management_interfaces = {"eth1"};
    options.lease_check_ms = 50;
    service_ = std::make_unique<AgentService>(*local_, probe_, options);
    service_->startLeaseThread();
    http::ServerOptions http_options;
    http_options.address = "127.0.0.1";
    http_options.port = 0;
    http_options.threads = 4;
    auto server = http::Server::start(http_options, [this](const core::HttpRequest& request) {
      return service_->handle(request);
    });
    ASSERT_TRUE(server.isOk()) << server.status().toString();
    server_ = std::move(server.value());
    url_ = "http://127.0.0.1:" + std::to_string(server_->port());
  }

  void TearDown() override {
    if (service_) service_->shutdown(500);
    if (server_) server_->stop();
  }

  // The rank binary: a shell script that ignores its arguments and runs `body`.
  void writeScript(const std::string& body) {
    std::ofstream out(script_);
    out << "#!/bin/sh\n" << body;
    out.close();
    std::filesystem::permissions(script_, std::filesystem::perms::owner_all);
  }

  std::unique_ptr<Agent> remote(int64_t lease_ms = 5000, const std::string& token = kToken) {
    return makeRemoteAgent({url_, token, lease_ms, 3000});
  }

  TempDir dir_;
  std::string script_;
  injectors::Registry registry_;
  RecordingInjector* injector_ = nullptr;
  std::unique_ptr<sys::ProcessLauncher> launcher_;
  std::unique_ptr<LocalAgent> local_;
  FixedHostProbe probe_;
  std::unique_ptr<AgentService> service_;
  std::unique_ptr<http::Server> server_;
  std::string url_;
};

TEST_F(AgentOverHttp, ApplyObserveRevertRoundTrip) {
  auto agent = remote();
  auto kinds = agent->capabilities();
  ASSERT_EQ(kinds.size(), 1u);
  EXPECT_EQ(kinds[0].kind, "fake_down");
  EXPECT_TRUE(kinds[0].available);
  EXPECT_TRUE(agent->validateFault("fake_down", {{"down_ms", 10}}).isOk());
  // Out of range: the agent's 422 comes back as such.
  auto bad = agent->validateFault("fake_down", {{"down_ms", -1}});
  EXPECT_EQ(bad.code(), core::StatusCode::kUnprocessable);
  EXPECT_NE(bad.message().find("down_ms"), std::string::npos) << bad.message();
  auto unknown = agent->validateFault("smoke", {});
  EXPECT_EQ(unknown.code(), core::StatusCode::kInvalidArgument);
  EXPECT_NE(unknown.message().find("valid kinds: fake_down"), std::string::npos);

  const auto fault = fakeFault("eth0");
  auto prior = agent->captureFault(fault);
  ASSERT_TRUE(prior.isOk());
  EXPECT_EQ(prior.value(), json::object());  // the agent keeps the prior
  ASSERT_TRUE(agent->applyFault(fault).isOk());
  EXPECT_FALSE(injector_->up("eth0"));
  EXPECT_EQ(service_->activeFaults(), 1u);
  // Applying again (a retried step) leaves one fault.
  ASSERT_TRUE(agent->applyFault(fault).isOk());
  EXPECT_EQ(service_->activeFaults(), 1u);
  auto observed = agent->observeFault(fault);
  ASSERT_TRUE(observed.isOk()) << observed.status().toString();
  EXPECT_EQ(observed.value(), json({{"up", false}}));
  ASSERT_TRUE(agent->revertFault(fault, *prior).isOk());
  EXPECT_TRUE(injector_->up("eth0"));
  EXPECT_EQ(service_->activeFaults(), 0u);
  // Reverting twice succeeds (idempotent), by description.
  EXPECT_TRUE(agent->revertFault(fault, *prior).isOk());
  // Observing a fault that is not applied works by description too.
  auto idle = agent->observeFault(fault);
  ASSERT_TRUE(idle.isOk());
  EXPECT_EQ(idle.value(), json({{"up", true}}));
}

// A scheduled fault: handed over ahead, applied by the agent's lease thread at the instant
// (converted to the agent's clock), confirmed with when it came into force on ours.
TEST_F(AgentOverHttp, AScheduledFaultIsAppliedByTheAgentAtItsInstantAndConfirmed) {
  auto agent = remote();
  ASSERT_TRUE(agent->appliesOnSchedule());
  const auto fault = fakeFault("eth0");
  ASSERT_TRUE(agent->captureFault(fault).isOk());
  const int64_t at_ns = core::steadyNowNs() + 150'000'000;
  ASSERT_TRUE(agent->scheduleFault(fault, at_ns).isOk());
  EXPECT_TRUE(injector_->up("eth0"));  // held, not applied
  EXPECT_EQ(service_->activeFaults(), 1u);
  auto applied = agent->awaitScheduled(fault, at_ns + 5'000'000'000);
  ASSERT_TRUE(applied.isOk()) << applied.status().toString();
  EXPECT_FALSE(injector_->up("eth0"));
  // One machine, one clock: the agent's record maps back to the instant or after it, give or
  // take the offset estimate's error (half the best round trip on loopback).
  EXPECT_GE(*applied, at_ns - 2'000'000);
  // And its revert, scheduled the same way.
  const int64_t revert_ns = core::steadyNowNs() + 100'000'000;
  ASSERT_TRUE(agent->scheduleRevert(fault, revert_ns).isOk());
  EXPECT_FALSE(injector_->up("eth0"));
  auto reverted = agent->awaitReverted(fault, revert_ns + 5'000'000'000);
  ASSERT_TRUE(reverted.isOk()) << reverted.status().toString();
  EXPECT_TRUE(injector_->up("eth0"));
  EXPECT_GE(reverted->reverted_at_ns, revert_ns - 2'000'000);
  EXPECT_EQ(reverted->observed, json({{"up", false}}));
  EXPECT_EQ(service_->activeFaults(), 0u);
  // Reverting again is harmless (by description: the agent no longer holds it).
  EXPECT_TRUE(agent->revertFault(fault, json::object()).isOk());
}

// The agent reverts at the instant; a renewal sent after that gets a 404 and stops renewing.
// The confirmation must still find the agent's record, not revert a second time.
TEST_F(AgentOverHttp, AScheduledRevertIsConfirmedEvenAfterARenewalFoundTheFaultGone) {
  auto agent = remote(/*lease_ms=*/150);  // renewed every 50 ms
  const auto fault = fakeFault("eth0");
  ASSERT_TRUE(agent->captureFault(fault).isOk());
  ASSERT_TRUE(agent->applyFault(fault).isOk());
  const int64_t revert_ns = core::steadyNowNs() + 30'000'000;
  ASSERT_TRUE(agent->scheduleRevert(fault, revert_ns).isOk());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // several renewals past it
  auto reverted = agent->awaitReverted(fault, core::steadyNowNs() + 5'000'000'000);
  ASSERT_TRUE(reverted.isOk()) << reverted.status().toString();
  EXPECT_EQ(reverted->observed, json({{"up", false}}));  // the agent's record, not a default
  int reverts = 0;
  for (const auto& c : injector_->calls()) reverts += c.rfind("revert eth0", 0) == 0;
  EXPECT_EQ(reverts, 1);
}

TEST_F(AgentOverHttp, AScheduledFaultCancelledOrFailedLeavesTheHostAsItWas) {
  auto agent = remote();
  const auto fault = fakeFault("eth0");
  ASSERT_TRUE(agent->captureFault(fault).isOk());
  // Reverted before its instant: cancelled on the agent, never applied.
  ASSERT_TRUE(agent->scheduleFault(fault, core::steadyNowNs() + 2'000'000'000).isOk());
  ASSERT_TRUE(agent->revertFault(fault, json::object()).isOk());
  EXPECT_EQ(service_->activeFaults(), 0u);
  for (const auto& c : injector_->calls()) EXPECT_NE(c, "apply eth0");
  // Failing at its instant: the confirmation carries the agent's error.
  injector_->failApply(true);
  const int64_t at_ns = core::steadyNowNs() + 50'000'000;
  ASSERT_TRUE(agent->scheduleFault(fault, at_ns).isOk());
  auto failed = agent->awaitScheduled(fault, at_ns + 5'000'000'000);
  ASSERT_FALSE(failed.isOk());
  EXPECT_NE(failed.status().message().find("injected apply failure"), std::string::npos)
      << failed.status().toString();
  EXPECT_TRUE(injector_->up("eth0"));
  EXPECT_EQ(service_->activeFaults(), 0u);
}

TEST_F(AgentOverHttp, RefusalsAndAuthenticationFailuresAreClearErrors) {
  auto agent = remote();
  auto mgmt = agent->applyFault(fakeFault("eth1"));
  EXPECT_EQ(mgmt.code(), core::StatusCode::kPermissionDenied);
  EXPECT_NE(mgmt.message().find("management interface"), std::string::npos) << mgmt.message();
  EXPECT_NE(mgmt.message().find(url_), std::string::npos) << mgmt.message();
  EXPECT_EQ(injector_->mutations(), 0);

  auto intruder = remote(5000, "not-the-token");
  auto refused = intruder->applyFault(fakeFault("eth0"));
  EXPECT_EQ(refused.code(), core::StatusCode::kUnauthenticated);
  EXPECT_TRUE(intruder->capabilities().empty());
  EXPECT_EQ(intruder->validateFault("fake_down", {}).code(), core::StatusCode::kUnauthenticated);
  EXPECT_EQ(injector_->mutations(), 0);
}

TEST_F(AgentOverHttp, InfoIsTheAgentsOwnReportDecoded) {
  auto agent = remote();
  const int64_t before = std::chrono::duration_cast<std::chrono::nanoseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  auto info = agent->info();
  ASSERT_TRUE(info.isOk()) << info.status().toString();
  EXPECT_EQ(info->hostname, "vm-test-1") << "the probe's, as the local agent was given none";
  ASSERT_EQ(info->kinds.size(), 1u);
  EXPECT_EQ(info->kinds[0].kind, "fake_down");
  EXPECT_TRUE(info->kinds[0].available);
  // Same machine, same clock: the agent's sample lies within this call.
  EXPECT_GE(info->clock.realtime_ns, before);
  EXPECT_LE(info->clock.realtime_ns - before, 3'000'000'000);
}

TEST_F(AgentOverHttp, AnUnreachableAgentIsUnavailableAndNamed) {
  // A port nobody listens on: bind one, note it, close it.
  std::string dead_url;
  {
    http::ServerOptions options;
    options.port = 0;
    auto server =
        http::Server::start(options, [](const core::HttpRequest&) { return core::HttpResponse{}; });
    ASSERT_TRUE(server.isOk());
    dead_url = "http://127.0.0.1:" + std::to_string(server.value()->port());
    server.value()->stop();
  }
  auto agent = makeRemoteAgent({dead_url, kToken, 5000, 1000});
  auto status = agent->applyFault(fakeFault("eth0"));
  EXPECT_EQ(status.code(), core::StatusCode::kUnavailable);
  EXPECT_NE(status.message().find(dead_url), std::string::npos) << status.message();
  EXPECT_EQ(agent->validateFault("fake_down", {}).code(), core::StatusCode::kUnavailable);
  auto info = agent->info();
  ASSERT_FALSE(info.isOk());
  EXPECT_EQ(info.status().code(), core::StatusCode::kUnavailable);
  RecordingListener listener;
  auto workload = agent->startWorkload({RankSpec{}}, core::steadyNowNs(), &listener);
  ASSERT_FALSE(workload.isOk());
  EXPECT_EQ(workload.status().code(), core::StatusCode::kUnavailable);
}

TEST_F(AgentOverHttp, RenewalKeepsAFaultAliveAndExpiryRevertsItWhenTheControllerGoes) {
  constexpr int64_t kLeaseMs = 300;
  auto agent = remote(kLeaseMs);
  ASSERT_TRUE(agent->applyFault(fakeFault("eth0")).isOk());
  // Well past three leases: still applied, because the RemoteAgent renews it.
  std::this_thread::sleep_for(std::chrono::milliseconds(4 * kLeaseMs));
  EXPECT_FALSE(injector_->up("eth0"));
  EXPECT_EQ(service_->activeFaults(), 1u);

  // The controller goes away without reverting: the agent reverts when the lease runs out.
  const int64_t gone = core::steadyNowNs();
  agent.reset();
  ASSERT_TRUE(waitUntil(3000, [&] { return injector_->up("eth0"); }));
  const int64_t took_ms = (core::steadyNowNs() - gone) / 1000000;
  EXPECT_LE(took_ms, kLeaseMs + 300);
  EXPECT_EQ(service_->activeFaults(), 0u);
}

TEST_F(AgentOverHttp, AFreshControllerRevertsByDescription) {
  // Start-up recovery: the engine's journal holds the fault and the (empty) prior, and a new
  // RemoteAgent that never applied it is asked to revert it.
  auto first = remote(60000);
  ASSERT_TRUE(first->applyFault(fakeFault("eth0")).isOk());
  auto journalled_prior = first->captureFault(fakeFault("eth0"));
  first.reset();
  EXPECT_FALSE(injector_->up("eth0"));
  auto second = remote();
  ASSERT_TRUE(second->revertFault(fakeFault("eth0"), journalled_prior.value()).isOk());
  EXPECT_TRUE(injector_->up("eth0"));
  EXPECT_EQ(service_->activeFaults(), 0u);
}

TEST_F(AgentOverHttp, AFaultRevertedByLeaseIsStillRevertedCleanly) {
  auto agent = remote(60000);
  ASSERT_TRUE(agent->applyFault(fakeFault("eth0")).isOk());
  // The agent loses it behind the controller's back (as if its lease had expired).
  ASSERT_EQ(service_->shutdown(0), 0);
  EXPECT_TRUE(agent->revertFault(fakeFault("eth0"), json::object()).isOk());
}

TEST_F(AgentOverHttp, WorkloadSamplesReachTheListenerOnTheControllersTimeline) {
  // Bake the agent's clock into the script so the samples start "now".
  const int64_t base = core::steadyNowNs();
  std::string body = "echo '" + workload::encodeReady(0, base) + "'\n";
  for (int i = 0; i < 20; ++i) {
    body += "echo '" +
            workload::encodeSamples(0, {{i, base + int64_t{i} * 2'000'000, 1'500'000, 65536}}) +
            "'\n";
  }
  body += "echo '" + workload::encodeDone(0, base + 40'000'000, 20) + "'\nexit 3\n";
  writeScript(body);

  auto agent = remote();
  RecordingListener listener;
  const int64_t origin = core::steadyNowNs() - 1'000'000'000;  // the run began a second ago
  RankSpec spec;
  spec.rank = 0;
  auto handle = agent->startWorkload({spec}, origin, &listener);
  ASSERT_TRUE(handle.isOk()) << handle.status().toString();
  ASSERT_TRUE(listener.waitFor(10000, [](RecordingListener& l) { return !l.exits.empty(); }));
  (*handle)->stop(1000);
  EXPECT_EQ((*handle)->runningRanks(), 0);

  std::lock_guard lock(listener.mu);
  ASSERT_EQ(listener.samples.size(), 20u);
  for (int i = 0; i < 20; ++i) {
    const auto& sample = listener.samples[static_cast<size_t>(i)];
    EXPECT_EQ(sample.rank, 0);
    EXPECT_EQ(sample.iteration, i);
    // Same host, same clock: only the estimator's error (half a loopback round trip) remains.
    const double expected_ms = static_cast<double>(base - origin) / 1e6 + 2.0 * i;
    EXPECT_NEAR(sample.start_ms, expected_ms, 5.0) << i;
    EXPECT_DOUBLE_EQ(sample.duration_ms, 1.5);
    EXPECT_EQ(sample.bytes, 65536);
  }
  ASSERT_GE(listener.events.size(), 2u);
  EXPECT_EQ(listener.events[0].kind, "rank_ready");
  EXPECT_NEAR(listener.events[0].t_ms, static_cast<double>(base - origin) / 1e6, 5.0);
  EXPECT_EQ(listener.events[1].kind, "rank_done");
  ASSERT_EQ(listener.exits.size(), 1u);
  EXPECT_EQ(listener.exits[0], (std::pair<int, int>{0, 3}));
}

TEST_F(AgentOverHttp, StoppingAWorkloadEndsItsRanksAndDeliversTheirExit) {
  const int64_t base = core::steadyNowNs();
  writeScript("echo '" + workload::encodeReady(0, base) + "'\n" + "echo '" +
              workload::encodeSamples(0, {{0, base, 1'000'000, 64}}) + "'\n" + "exec sleep 30\n");
  auto agent = remote();
  RecordingListener listener;
  RankSpec spec;
  spec.rank = 5;
  auto handle = agent->startWorkload({spec}, base, &listener);
  ASSERT_TRUE(handle.isOk()) << handle.status().toString();
  ASSERT_TRUE(listener.waitFor(10000, [](RecordingListener& l) { return !l.samples.empty(); }));
  EXPECT_EQ((*handle)->runningRanks(), 1);
  const int64_t t0 = core::steadyNowNs();
  (*handle)->stop(2000);
  EXPECT_LT(core::steadyNowNs() - t0, 5'000'000'000);
  EXPECT_EQ((*handle)->runningRanks(), 0);
  std::lock_guard lock(listener.mu);
  ASSERT_EQ(listener.exits.size(), 1u);
  EXPECT_EQ(listener.exits[0].first, 5);
  EXPECT_EQ(listener.exits[0].second, 128 + SIGTERM);
  EXPECT_EQ(listener.samples[0].rank, 5);  // LocalAgent labels reports with the spec's rank
}

// ---------------------------------------------------------------------------------------------
// Pure parts

TEST(ClockOffsetEstimator, TheSmallestRoundTripWins) {
  ClockOffsetEstimator estimator;
  EXPECT_FALSE(estimator.valid());
  // Remote clock = local + 5 s. A slow exchange (RTT 10 ms, stamped late) first...
  estimator.add(1'000'000'000, 6'009'000'000, 1'010'000'000);
  EXPECT_TRUE(estimator.valid());
  EXPECT_EQ(estimator.offsetNs(), 5'004'000'000);
  // ...then a fast one (RTT 100 us), which wins.
  estimator.add(2'000'000'000, 7'000'050'000, 2'000'100'000);
  EXPECT_EQ(estimator.offsetNs(), 5'000'000'000);
  EXPECT_EQ(estimator.bestRoundTripNs(), 100'000);
  // A slower one later does not displace it.
  estimator.add(3'000'000'000, 8'000'900'000, 3'001'000'000);
  EXPECT_EQ(estimator.offsetNs(), 5'000'000'000);
  EXPECT_EQ(estimator.samples(), 3);
  EXPECT_EQ(estimator.toLocalNs(9'000'000'000), 4'000'000'000);
  // An exchange whose receive precedes its send is nonsense and ignored.
  estimator.add(5, 0, 4);
  EXPECT_EQ(estimator.samples(), 3);
}

TEST(ClockOffsetEstimator, WorksWithARemoteClockBehindOurs) {
  ClockOffsetEstimator estimator;
  estimator.add(10'000'000'000, 2'000'000'500, 10'000'001'000);
  EXPECT_EQ(estimator.offsetNs(), -8'000'000'000);
  EXPECT_EQ(estimator.toLocalNs(2'000'000'000), 10'000'000'000);
}

TEST(ParseHttpUrl, AcceptsHttpUrlsAndExplainsTheRest) {
  auto plain = net::parseHttpUrl("http://127.0.0.1:7101");
  ASSERT_TRUE(plain.isOk());
  EXPECT_EQ(plain->host, "127.0.0.1");
  EXPECT_EQ(plain->port, 7101);
  EXPECT_EQ(plain->base_path, "");
  auto named = net::parseHttpUrl("http://agent-3.lab/prefix/");
  ASSERT_TRUE(named.isOk());
  EXPECT_EQ(named->host, "agent-3.lab");
  EXPECT_EQ(named->port, 80);
  EXPECT_EQ(named->base_path, "/prefix");
  auto v6 = net::parseHttpUrl("http://[::1]:7100");
  ASSERT_TRUE(v6.isOk());
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, 7100);
  for (const std::string bad : {"ftp://x", "127.0.0.1:7100", "http://:80", "http://x:99999",
                                "http://x:7a", "http://[::1", "http://x/?a=1"}) {
    auto url = net::parseHttpUrl(bad);
    EXPECT_FALSE(url.isOk()) << bad;
    EXPECT_EQ(url.status().code(), core::StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_NE(net::parseHttpUrl("ftp://x").status().message().find("ftp"), std::string::npos);
}

TEST(HttpClient, ABadBaseUrlFailsEveryRequest) {
  net::HttpClient client("tcp://nowhere", 100);
  EXPECT_FALSE(client.status().isOk());
  core::HttpRequest request;
  request.method = "GET";
  request.target = "/";
  EXPECT_EQ(client.send(request).status().code(), core::StatusCode::kInvalidArgument);
}

TEST(HttpClient, ASilentPeerTimesOut) {
  // A server whose handler takes longer than the client's deadline.
  http::ServerOptions options;
  options.port = 0;
  auto server = http::Server::start(options, [](const core::HttpRequest&) {
    std::this_thread::sleep_for(std::chrono::milliseconds(600));
    return core::HttpResponse{};
  });
  ASSERT_TRUE(server.isOk());
  net::HttpClient client("http://127.0.0.1:" + std::to_string(server.value()->port()), 5000);
  core::HttpRequest request;
  request.method = "GET";
  request.target = "/agent/v1/info";
  const int64_t t0 = core::steadyNowNs();
  auto response = client.send(request, 150);
  const int64_t took_ms = (core::steadyNowNs() - t0) / 1000000;
  ASSERT_FALSE(response.isOk());
  EXPECT_EQ(response.status().code(), core::StatusCode::kUnavailable);
  EXPECT_NE(response.status().message().find("timed out"), std::string::npos)
      << response.status().message();
  EXPECT_LT(took_ms, 500);
  // And a patient one gets the answer, status and body intact.
  auto patient = client.send(request, 3000);
  ASSERT_TRUE(patient.isOk()) << patient.status().toString();
  EXPECT_EQ(patient->status, 200);
  server.value()->stop();
}

}  // namespace
}  // namespace fabric_chaos::agent
