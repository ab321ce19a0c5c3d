// Scheduled applies on the agent (POST /agent/v1/faults with apply_at_ns): the fault is held and
// journaled at once, applied at its instant by the lease thread (or applyDue() by hand), its
// lease counted from the instant; GET says scheduled, applied or failed; DELETE before the
// instant cancels without touching the host; shutdown drops what has not come. Scheduled reverts
// (POST /agent/v1/faults/{id}/revert-at) likewise: observed and reverted at the instant, GET then
// says reverted, a failed one stays with its error.

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "agent/agent_service.h"
#include "agent/local_agent.h"
#include "core/clock.h"
#include "injectors/registry.h"
#include "tests/agent/agent_test_support.h"
#include "tests/fakes/fake_process.h"

namespace fabric_chaos::agent {
namespace {

using nlohmann::json;
using testing::fakeFault;
using testing::FixedHostProbe;
using testing::RecordingInjector;

constexpr char kToken[] = "schedule-token-0123456789abcdef";

class ScheduledApplyOnTheAgent : public ::testing::Test {
 protected:
  ScheduledApplyOnTheAgent() {
    auto injector = std::make_unique<RecordingInjector>();
    injector_ = injector.get();
    registry_.add(std::move(injector));
    agent_ = std::make_unique<LocalAgent>(registry_, launcher_, LocalAgentOptions{"/bin/true", ""});
  }

  AgentService& service(AgentServiceOptions options = {}) {
    options.token = kToken;
    options.management_interfaces = {"eth1"};
    service_ = std::make_unique<AgentService>(*agent_, probe_, options);
    return *service_;
  }

  core::HttpResponse call(const std::string& method, const std::string& target,
                          const json& body = nullptr) {
    return testing::callService(*service_, kToken, method, target, body);
  }

  core::HttpResponse schedule(const std::string& ifname, int64_t at_ns, int64_t lease_ms = 5000) {
    return call("POST", "/agent/v1/faults",
                {{"fault", injectors::toJson(fakeFault(ifname))},
                 {"lease_ms", lease_ms},
                 {"apply_at_ns", at_ns}});
  }

  static json parse(const core::HttpResponse& response) { return testing::parseAnswer(response); }

  static void sleepUntil(int64_t ns) {
    std::this_thread::sleep_until(
        std::chrono::steady_clock::time_point(std::chrono::nanoseconds(ns)));
  }

  injectors::Registry registry_;
  RecordingInjector* injector_ = nullptr;
  fakes::FakeProcessLauncher launcher_;
  std::unique_ptr<LocalAgent> agent_;
  FixedHostProbe probe_;
  std::unique_ptr<AgentService> service_;
};

TEST_F(ScheduledApplyOnTheAgent, TheLeaseThreadAppliesItAtItsInstant) {
  AgentServiceOptions options;
  options.lease_check_ms = 1000;  // the instant, not the lease check, must wake the thread
  service(options).startLeaseThread();
  const int64_t at_ns = core::steadyNowNs() + 200'000'000;
  auto scheduled = schedule("eth0", at_ns);
  ASSERT_EQ(scheduled.status, 202) << scheduled.body;
  json doc = parse(scheduled);
  EXPECT_EQ(doc["state"], "scheduled");
  EXPECT_EQ(doc["apply_at_ns"], at_ns);
  EXPECT_EQ(doc["prior"], json({{"up", true}}));  // captured when it was handed over
  EXPECT_EQ(doc["lease_deadline_ns"], at_ns + 5'000'000'000);
  EXPECT_TRUE(injector_->up("eth0"));
  const std::string id = doc["id"];

  auto pending = call("GET", "/agent/v1/faults/" + id + "?observe=0");
  ASSERT_EQ(pending.status, 200) << pending.body;
  EXPECT_EQ(parse(pending)["state"], "scheduled");
  EXPECT_FALSE(parse(pending).contains("observed"));

  const int64_t give_up = core::steadyNowNs() + 5'000'000'000;
  while (injector_->up("eth0") && core::steadyNowNs() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ASSERT_FALSE(injector_->up("eth0"));
  auto applied = call("GET", "/agent/v1/faults/" + id);
  ASSERT_EQ(applied.status, 200) << applied.body;
  doc = parse(applied);
  EXPECT_EQ(doc["state"], "applied");
  EXPECT_GE(doc["applied_at_ns"].get<int64_t>(), at_ns);
  EXPECT_EQ(doc["observed"], json({{"up", false}}));

  ASSERT_EQ(call("DELETE", "/agent/v1/faults/" + id).status, 200);
  EXPECT_TRUE(injector_->up("eth0"));
}

TEST_F(ScheduledApplyOnTheAgent, DeletedBeforeItsInstantItIsCancelledAndTheHostIsNeverTouched) {
  service();  // no lease thread: applyDue() by hand
  const int64_t at_ns = core::steadyNowNs() + 50'000'000;
  auto scheduled = schedule("eth0", at_ns);
  ASSERT_EQ(scheduled.status, 202) << scheduled.body;
  const std::string id = parse(scheduled)["id"];
  auto cancelled = call("DELETE", "/agent/v1/faults/" + id);
  ASSERT_EQ(cancelled.status, 200) << cancelled.body;
  EXPECT_EQ(parse(cancelled)["cancelled"], true);
  sleepUntil(at_ns);
  EXPECT_EQ(service_->applyDue(), 0);
  EXPECT_EQ(injector_->mutations(), 0);
  EXPECT_EQ(service_->activeFaults(), 0u);
  EXPECT_EQ(call("GET", "/agent/v1/faults/" + id).status, 404);
}

TEST_F(ScheduledApplyOnTheAgent, AnApplyThatFailsAtItsInstantIsPutBackAndReportedAsFailed) {
  service();
  const int64_t at_ns = core::steadyNowNs() + 20'000'000;
  auto scheduled = schedule("eth0", at_ns);
  ASSERT_EQ(scheduled.status, 202) << scheduled.body;
  const std::string id = parse(scheduled)["id"];
  injector_->failApply(true);
  sleepUntil(at_ns);
  EXPECT_EQ(service_->applyDue(), 0);
  EXPECT_EQ(service_->activeFaults(), 0u);
  EXPECT_TRUE(injector_->up("eth0"));  // the half-applied fault was reverted
  auto failed = call("GET", "/agent/v1/faults/" + id);
  ASSERT_EQ(failed.status, 200) << failed.body;
  EXPECT_EQ(parse(failed)["state"], "failed");
  EXPECT_NE(parse(failed)["error"].get<std::string>().find("injected apply failure"),
            std::string::npos);
}

TEST_F(ScheduledApplyOnTheAgent, ItsLeaseRunsFromTheInstantNotFromTheDelivery) {
  service();
  const int64_t at_ns = core::steadyNowNs() + 80'000'000;
  auto scheduled = schedule("eth0", at_ns, /*lease_ms=*/20);
  ASSERT_EQ(scheduled.status, 202) << scheduled.body;
  const std::string id = parse(scheduled)["id"];
  // A renewal before the instant still counts from the instant.
  auto renewed = call("POST", "/agent/v1/faults/" + id + "/renew", {{"lease_ms", 30}});
  ASSERT_EQ(renewed.status, 200) << renewed.body;
  EXPECT_EQ(parse(renewed)["lease_deadline_ns"], at_ns + 30'000'000);
  // Past the delivery plus a lease, but before the instant: a scheduled fault never expires.
  std::this_thread::sleep_for(std::chrono::milliseconds(40));
  EXPECT_EQ(service_->expireLeases(), 0);
  EXPECT_EQ(service_->activeFaults(), 1u);
  sleepUntil(at_ns);
  EXPECT_EQ(service_->applyDue(), 1);
  EXPECT_FALSE(injector_->up("eth0"));
  sleepUntil(at_ns + 31'000'000);
  EXPECT_EQ(service_->expireLeases(), 1);  // and then it ends with its lease, as any fault
  EXPECT_TRUE(injector_->up("eth0"));
}

TEST_F(ScheduledApplyOnTheAgent, InstantsTooFarAheadAreRefusedAndPastOnesApplyAtOnce) {
  AgentServiceOptions options;
  options.max_schedule_ahead_ms = 1000;
  service(options);
  auto far = schedule("eth0", core::steadyNowNs() + 5'000'000'000);
  EXPECT_EQ(far.status, 400) << far.body;
  EXPECT_NE(far.body.find("apply_at_ns"), std::string::npos);
  EXPECT_EQ(service_->activeFaults(), 0u);
  EXPECT_EQ(schedule("eth0", -1).status, 400);

  // A delivery that arrives after its instant: applied on the spot, like an apply without one.
  auto late = schedule("eth0", core::steadyNowNs() - 1'000'000);
  ASSERT_EQ(late.status, 201) << late.body;
  EXPECT_EQ(parse(late)["state"], "applied");
  EXPECT_FALSE(injector_->up("eth0"));
}

TEST_F(ScheduledApplyOnTheAgent, ShutdownDropsWhatHasNotComeAndRevertsWhatHas) {
  service();
  ASSERT_EQ(schedule("eth0", core::steadyNowNs() - 1'000'000).status, 201);
  ASSERT_EQ(schedule("eth2", core::steadyNowNs() + 5'000'000'000).status, 202);
  EXPECT_EQ(service_->shutdown(100), 0);
  EXPECT_EQ(service_->activeFaults(), 0u);
  EXPECT_TRUE(injector_->up("eth0"));
  // eth2 was never applied, so it was not reverted either.
  for (const auto& c : injector_->calls()) {
    EXPECT_TRUE(c != "apply eth2" && c.rfind("revert eth2", 0) != 0) << c;
  }
}

TEST_F(ScheduledApplyOnTheAgent, ARevertAtItsInstantIsObservedRevertedAndReported) {
  service();  // revertDue() by hand
  auto applied = call("POST", "/agent/v1/faults",
                      {{"fault", injectors::toJson(fakeFault("eth0"))}, {"lease_ms", 5000}});
  ASSERT_EQ(applied.status, 201) << applied.body;
  const std::string id = parse(applied)["id"];
  ASSERT_FALSE(injector_->up("eth0"));
  const int64_t at_ns = core::steadyNowNs() + 30'000'000;
  auto scheduled = call("POST", "/agent/v1/faults/" + id + "/revert-at", {{"revert_at_ns", at_ns}});
  ASSERT_EQ(scheduled.status, 202) << scheduled.body;
  EXPECT_EQ(parse(scheduled)["revert_at_ns"], at_ns);
  EXPECT_EQ(service_->revertDue(), 0);  // not yet
  EXPECT_FALSE(injector_->up("eth0"));
  sleepUntil(at_ns);
  EXPECT_EQ(service_->revertDue(), 1);
  EXPECT_TRUE(injector_->up("eth0"));
  EXPECT_EQ(service_->activeFaults(), 0u);
  auto done = call("GET", "/agent/v1/faults/" + id);
  ASSERT_EQ(done.status, 200) << done.body;
  const json doc = parse(done);
  EXPECT_EQ(doc["state"], "reverted");
  EXPECT_GE(doc["reverted_at_ns"].get<int64_t>(), at_ns);
  EXPECT_EQ(doc["observed"], json({{"up", false}}));  // seen just before the revert
}

TEST_F(ScheduledApplyOnTheAgent, AScheduledRevertThatFailsLeavesTheFaultWithItsError) {
  service();
  auto applied = call("POST", "/agent/v1/faults",
                      {{"fault", injectors::toJson(fakeFault("eth0"))}, {"lease_ms", 5000}});
  ASSERT_EQ(applied.status, 201) << applied.body;
  const std::string id = parse(applied)["id"];
  EXPECT_EQ(call("POST", "/agent/v1/faults/" + id + "/revert-at", json::object()).status, 400);
  EXPECT_EQ(call("POST", "/agent/v1/faults/f-99/revert-at", {{"revert_at_ns", 1}}).status, 404);
  auto far = call("POST", "/agent/v1/faults/" + id + "/revert-at",
                  {{"revert_at_ns", core::steadyNowNs() + 60'000'000'000}});
  EXPECT_EQ(far.status, 400) << far.body;

  injector_->failRevert(true);
  ASSERT_EQ(call("POST", "/agent/v1/faults/" + id + "/revert-at", {{"revert_at_ns", 1}}).status,
            202);  // an instant already past: the next pass
  EXPECT_EQ(service_->revertDue(), 0);
  EXPECT_EQ(service_->activeFaults(), 1u);
  auto held = call("GET", "/agent/v1/faults/" + id + "?observe=0");
  ASSERT_EQ(held.status, 200) << held.body;
  EXPECT_EQ(parse(held)["state"], "applied");
  EXPECT_NE(parse(held)["revert_error"].get<std::string>().find("injected revert failure"),
            std::string::npos);
  EXPECT_EQ(service_->revertDue(), 0);  // not retried by itself: the controller's DELETE is
  injector_->failRevert(false);
  ASSERT_EQ(call("DELETE", "/agent/v1/faults/" + id).status, 200);
  EXPECT_TRUE(injector_->up("eth0"));
}

}  // namespace
}  // namespace fabric_chaos::agent
