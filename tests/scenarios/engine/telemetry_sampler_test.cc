// The run's switch telemetry sampler against a scripted SwitchTelemetry and an in-memory store:
// only modelled switches are read, points carry the run clock, a failing switch is reported once
// (and its recovery once), and stop() stores everything the thread read.

#include "scenarios/engine/telemetry_sampler.h"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "tests/fakes/fake_agent.h"

namespace fabric_chaos::scenarios {
namespace {

using nlohmann::json;

class ManualClock : public core::Clock {
 public:
  int64_t nowNs() override { return now_ns.load(); }
  bool sleepUntilNs(int64_t) override { return true; }
  void wake() override {}
  std::atomic<int64_t> now_ns{0};
};

class ScriptedSwitches : public SwitchTelemetry {
 public:
  core::Result<std::vector<core::TelemetryPoint>> read(const Switch& sw) override {
    std::lock_guard lock(mu);
    ++reads_[sw.name];
    if (failing.count(sw.name) != 0) {
      return core::Status(core::StatusCode::kNotFound, "no such netns t-" + sw.name);
    }
    return std::vector<core::TelemetryPoint>{{0, sw.name + "/p0/best_effort", "tx_bytes", 42}};
  }
  int reads(const std::string& name) {
    std::lock_guard lock(mu);
    return reads_.count(name) == 0 ? 0 : reads_[name];
  }
  std::mutex mu;
  std::set<std::string> failing;  // set while the sampler thread is not running

 private:
  std::map<std::string, int> reads_;
};

Fabric fabricWithSwitches() {
  Fabric fabric;
  fabric.name = "t";
  Switch modelled{"sw0", "t-sw0", "br0", {"p0"}, {}, EgressModel{100'000'000, 65536, {26}}};
  Switch other = modelled;
  other.name = "sw1";
  Switch plain{"sw2", "t-sw2", "br0", {"p0"}, {}, std::nullopt};
  fabric.switches = {modelled, other, plain};
  return fabric;
}

class TelemetrySamplerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto opened = store::Store::open(":memory:");
    ASSERT_TRUE(opened.isOk()) << opened.status().toString();
    store_ = std::move(opened.value());
    auto run = store_->createRun("s", json::object(), "t");
    ASSERT_TRUE(run.isOk());
    run_id_ = *run;
  }
  TelemetrySamplerDeps deps() {
    return {store_.get(),
            &switches_,
            &clock_,
            run_id_,
            1'000'000'000,
            [this](const std::string& kind, json detail) {
              events_.push_back(kind + " " + detail.value("switch", detail.value("host", "")));
            }};
  }
  std::unique_ptr<store::Store> store_;
  int64_t run_id_ = 0;
  ScriptedSwitches switches_;
  ManualClock clock_;
  std::vector<std::string> events_;
};

TEST_F(TelemetrySamplerTest, ReadsModelledSwitchesAndStampsTheRunClock) {
  TelemetrySampler sampler(deps(), fabricWithSwitches());
  EXPECT_TRUE(sampler.samplesAnything());
  clock_.now_ns = 1'250'000'000;  // 250 ms into the run
  sampler.sampleOnce();
  clock_.now_ns = 1'350'000'000;
  sampler.sampleOnce();
  EXPECT_TRUE(store_->telemetry(run_id_)->empty()) << "kept until the batch is stored";
  sampler.storePending();
  auto points = store_->telemetry(run_id_);
  ASSERT_TRUE(points.isOk());
  ASSERT_EQ(points->size(), 4u);
  EXPECT_EQ((*points)[0].source, "sw0/p0/best_effort");
  EXPECT_DOUBLE_EQ((*points)[0].t_ms, 250);
  EXPECT_DOUBLE_EQ((*points)[1].t_ms, 350);
  EXPECT_EQ((*points)[2].source, "sw1/p0/best_effort");
  EXPECT_EQ(switches_.reads("sw2"), 0) << "an unmodelled switch has no queues to read";
}

TEST(OnRunClock, InstantsBecomeRunRelativeMicrosecondsAndNeverIsLeftOut) {
  // The run began at 1 s of CLOCK_MONOTONIC; the reading is 2.5 s into it.
  const auto points = onRunClock({{0, "sw0/p1/lossless", "pfc_rx_pause", 7},
                                  {0, "sw0/p1/lossless", "pfcwd_detected_at_us", 3'201'500'000},
                                  {0, "sw0/p1/lossless", "pfcwd_restored_at_us", 0},
                                  {0, "sw0/p2/lossless", "pfcwd_restored_at_us", 500'000'000}},
                                 2500, 1'000'000'000);
  ASSERT_EQ(points.size(), 3u);
  for (const core::TelemetryPoint& p : points) EXPECT_DOUBLE_EQ(p.t_ms, 2500);
  EXPECT_EQ(points[0].value, 7) << "a counter stays as read";
  EXPECT_EQ(points[1].metric, "pfcwd_detected_at_us");
  EXPECT_EQ(points[1].value, 2'201'500);
  // Before the run began (a storm of an earlier run): negative, still the event's own time.
  EXPECT_EQ(points[2].source, "sw0/p2/lossless");
  EXPECT_EQ(points[2].value, -500'000);
}

TEST_F(TelemetrySamplerTest, AFailingSwitchIsReportedOnceAndItsReturnToo) {
  TelemetrySampler sampler(deps(), fabricWithSwitches());
  switches_.failing = {"sw1"};
  sampler.sampleOnce();
  sampler.sampleOnce();
  switches_.failing.clear();
  sampler.sampleOnce();
  EXPECT_EQ(events_, (std::vector<std::string>{"telemetry_error sw1", "telemetry_resumed sw1"}));
  sampler.storePending();
  EXPECT_EQ(store_->telemetry(run_id_)->size(), 4u) << "sw0 three times, sw1 once";
}

TEST_F(TelemetrySamplerTest, TheThreadSamplesUntilStopAndStopStoresTheRest) {
  TelemetrySampler sampler(deps(), fabricWithSwitches());
  sampler.start();
  // No timing is asserted: only that the thread read, and that stop() left nothing unstored.
  while (switches_.reads("sw1") < 3) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  sampler.stop();
  const int reads = switches_.reads("sw0");
  EXPECT_EQ(store_->telemetry(run_id_)->size(),
            static_cast<size_t>(reads + switches_.reads("sw1")));
  sampler.stop();  // idempotent
  EXPECT_EQ(switches_.reads("sw0"), reads) << "nothing is read after stop";
}

TEST_F(TelemetrySamplerTest, WithoutASourceNothingIsSampled) {
  TelemetrySamplerDeps none = deps();
  none.source = nullptr;
  TelemetrySampler sampler(none, fabricWithSwitches());
  EXPECT_FALSE(sampler.samplesAnything());
  sampler.start();
  sampler.stop();
  EXPECT_TRUE(store_->telemetry(run_id_)->empty());
}

TEST(RdmaTelemetryHosts, EachRemoteAgentOnceAndTheControllersOwnNamespaceOnly) {
  Fabric fabric;
  auto host = [](std::string name, std::string netns, std::string agent) {
    Host h;
    h.name = std::move(name);
    h.netns = std::move(netns);
    h.agent = std::move(agent);
    return h;
  };
  fabric.hosts = {host("h0", "fcl-h0", "local"),  // a namespace: shares the machine's /sys
                  host("vm0", "", "http://127.0.0.1:7100"),
                  host("vm1", "", "http://127.0.0.1:7101"),
                  host("vm1-rail1", "", "http://127.0.0.1:7101"),  // the same machine as vm1
                  host("ctl", "", "local"),
                  host("ctl2", "", "")};
  std::vector<std::string> names;
  for (const Host& h : rdmaTelemetryHosts(fabric)) names.push_back(h.name);
  EXPECT_EQ(names, (std::vector<std::string>{"vm0", "vm1", "ctl"}));
}

TEST_F(TelemetrySamplerTest, RdmaHostsCountersBecomePortSeriesOnTheRunClock) {
  testing::FakeAgent vm1;
  vm1.rdma_counters = {{"rxe0", 1, {{"rcvd_seq_err", 0}, {"sent_pkts", 100}}}};
  vm1.rdma_counter_step = 5;
  testing::FakeAgent tcp_only;  // answers, with no RDMA port
  TelemetrySamplerDeps with_rdma = deps();
  with_rdma.rdma_hosts = {{"vm1", &vm1}, {"vm0", &tcp_only}};
  TelemetrySampler sampler(with_rdma, Fabric{});
  EXPECT_TRUE(sampler.samplesAnything());
  clock_.now_ns = 1'500'000'000;
  EXPECT_TRUE(sampler.sampleRdmaOnce(0));
  EXPECT_FALSE(sampler.sampleRdmaOnce(1)) << "a host without RDMA is not asked again";
  clock_.now_ns = 1'750'000'000;
  EXPECT_TRUE(sampler.sampleRdmaOnce(0));
  sampler.storePending();
  auto points = store_->telemetry(run_id_);
  ASSERT_TRUE(points.isOk());
  ASSERT_EQ(points->size(), 4u);
  EXPECT_EQ((*points)[0].source, "rdma/vm1/rxe0/1");
  EXPECT_EQ((*points)[0].metric, "rcvd_seq_err");
  EXPECT_DOUBLE_EQ((*points)[0].t_ms, 500);
  EXPECT_EQ((*points)[0].value, 5);
  EXPECT_DOUBLE_EQ((*points)[1].t_ms, 750);
  EXPECT_EQ((*points)[1].value, 10);
  EXPECT_EQ((*points)[3].metric, "sent_pkts");
  EXPECT_EQ((*points)[3].value, 110);
  EXPECT_TRUE(events_.empty());
}

TEST_F(TelemetrySamplerTest, AnUnreachableRdmaHostIsReportedOnceKeptAndItsReturnToo) {
  testing::FakeAgent vm1;
  vm1.rdma_counters = {{"rxe0", 1, {{"sent_pkts", 1}}}};
  vm1.unreachable = true;
  TelemetrySamplerDeps with_rdma = deps();
  with_rdma.rdma_hosts = {{"vm1", &vm1}};
  TelemetrySampler sampler(with_rdma, Fabric{});
  EXPECT_TRUE(sampler.sampleRdmaOnce(0)) << "a guest that does not answer is asked again";
  EXPECT_TRUE(sampler.sampleRdmaOnce(0));
  vm1.unreachable = false;
  EXPECT_TRUE(sampler.sampleRdmaOnce(0));
  EXPECT_EQ(events_, (std::vector<std::string>{"telemetry_error vm1", "telemetry_resumed vm1"}));
  sampler.storePending();
  EXPECT_EQ(store_->telemetry(run_id_)->size(), 1u);
}

TEST_F(TelemetrySamplerTest, RdmaHostsAreAskedOnTheirOwnThreadsUntilStop) {
  testing::FakeAgent vm1;
  vm1.rdma_counters = {{"rxe0", 1, {{"sent_pkts", 1}}}};
  TelemetrySamplerDeps with_rdma = deps();
  with_rdma.rdma_hosts = {{"vm1", &vm1}};
  TelemetrySampler sampler(with_rdma, fabricWithSwitches());
  sampler.start();
  while (vm1.rdmaCounterCalls() < 2 || switches_.reads("sw1") < 2) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  sampler.stop();
  const int asked = vm1.rdmaCounterCalls();
  EXPECT_EQ(store_->telemetry(run_id_)->size(),
            static_cast<size_t>(asked + switches_.reads("sw0") + switches_.reads("sw1")));
  EXPECT_EQ(vm1.rdmaCounterCalls(), asked) << "nothing is asked after stop";
}

}  // namespace
}  // namespace fabric_chaos::scenarios
