// What one poll of a run's event stream costs as the run grows (issue 15): a run of 3 000 samples
// and one of 300 000 (4 ranks, a 10-minute run's worth), each followed by its stream
// (GET /v1/runs/{id}/stream's code, server/api/stream_handlers.cc) on a WAL database on disk.
// Per tick, 40 new samples (4 ranks x 10 iterations: 100 ms of a fast ring) and an event arrive;
// the time of the stream's next() is measured, the SQLite reads and the JSON of what is new
// included. Beside it, what the stream did before it kept a cursor: read the run's samples and
// events whole each tick. Prints medians and p99 and the ratios large / small (target <= 2).
// Run: ./build/bench/stream_cost_bench [ticks]

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "server/api/api.h"
#include "server/api/handlers.h"
#include "store/store.h"

namespace {

using fabric_chaos::core::Sample;
using fabric_chaos::store::Store;
using Clock = std::chrono::steady_clock;

constexpr int kRanks = 4;
constexpr int kNewPerTick = 40;

void check(const fabric_chaos::core::Status& status, const char* what) {
  if (status.isOk()) return;
  std::fprintf(stderr, "stream_cost_bench: %s: %s\n", what, status.toString().c_str());
  std::exit(1);
}

double ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

double percentile(std::vector<double> values, double p) {
  std::sort(values.begin(), values.end());
  return values[std::min(values.size() - 1, static_cast<size_t>(p * values.size()))];
}

struct RunUnderWatch {
  int64_t id = 0;
  int64_t next_iteration = 0;
};

RunUnderWatch seed(Store& store, int samples) {
  auto id = store.createRun("bench", nlohmann::json{{"name", "bench"}}, "none");
  check(id.status(), "create run");
  check(store.setRunState(*id, "injecting"), "set state");
  RunUnderWatch run{*id, samples / kRanks};
  std::vector<Sample> batch;
  for (int64_t i = 0; i < run.next_iteration; ++i) {
    for (int rank = 0; rank < kRanks; ++rank) batch.push_back({rank, i, i * 2.5, 2.5, 1 << 20});
    if (batch.size() >= 4096) {
      check(store.appendSamples(*id, batch), "append");
      batch.clear();
    }
  }
  check(store.appendSamples(*id, batch), "append");
  for (int e = 0; e < 50; ++e) {
    check(store.appendEvent({*id, e * 100.0, e, "rank_heartbeat", {{"n", e}}}), "event");
  }
  return run;
}

void addTick(Store& store, RunUnderWatch& run) {
  std::vector<Sample> batch;
  for (int k = 0; k < kNewPerTick / kRanks; ++k, ++run.next_iteration) {
    for (int rank = 0; rank < kRanks; ++rank) {
      batch.push_back({rank, run.next_iteration, run.next_iteration * 2.5, 2.5, 1 << 20});
    }
  }
  check(store.appendSamples(run.id, batch), "append");
  check(store.appendEvent({run.id, run.next_iteration * 2.5, 0, "tick", nlohmann::json::object()}),
        "event");
}

struct Costs {
  std::vector<double> stream_ms;  // the stream's next() per tick
  std::vector<double> whole_ms;   // reading the run's samples and events whole
};

Costs measure(Store& store, RunUnderWatch& run, int ticks) {
  namespace api = fabric_chaos::api;
  api::ApiDeps deps;
  deps.store = &store;
  std::mutex scenario_mu;
  api::internal::Context ctx{deps, scenario_mu, {}};
  api::Request request;
  request.method = "GET";
  const std::string id = std::to_string(run.id);
  request.target = "/v1/runs/" + id + "/stream";
  api::internal::Call call{request, {id}, {}};
  api::Response refusal;
  auto stream = api::internal::openRunStream(ctx, call, &refusal);
  if (!stream) {
    std::fprintf(stderr, "stream_cost_bench: stream refused: %s\n", refusal.body.c_str());
    std::exit(1);
  }
  // What a viewer that opens the page late receives first: the backlog, page by page.
  do {
    (void)stream->next();
  } while (stream->pollIntervalMs() == 0);
  Costs costs;
  for (int t = 0; t < ticks; ++t) {
    addTick(store, run);
    const auto start = Clock::now();
    const auto chunk = stream->next();
    costs.stream_ms.push_back(ms(Clock::now() - start));
    if (chunk.text.find("event: samples") == std::string::npos) {
      std::fprintf(stderr, "stream_cost_bench: a tick without its samples\n");
      std::exit(1);
    }
    if (t % 10 == 0) {
      const auto whole_start = Clock::now();
      auto samples = store.samples(run.id);
      auto events = store.events(run.id);
      costs.whole_ms.push_back(ms(Clock::now() - whole_start));
      check(samples.status(), "samples");
      check(events.status(), "events");
    }
  }
  return costs;
}

}  // namespace

int main(int argc, char** argv) {
  const int ticks = argc > 1 ? std::atoi(argv[1]) : 200;
  char dir_template[] = "/tmp/fc-stream-bench-XXXXXX";
  const std::string dir = ::mkdtemp(dir_template);
  auto store = Store::open(dir + "/bench.db");
  check(store.status(), "open");
  RunUnderWatch small = seed(**store, 3000);
  RunUnderWatch large = seed(**store, 300000);
  const Costs at_small = measure(**store, small, ticks);
  const Costs at_large = measure(**store, large, ticks);
  std::printf(
      "stream_cost_bench: a stream tick with %d new samples and 1 event, %d ticks per run, WAL "
      "database on disk\n",
      kNewPerTick, ticks);
  std::printf("  %-44s %10s %10s %10s\n", "", "3k run", "300k run", "ratio");
  const double stream_small = percentile(at_small.stream_ms, 0.5);
  const double stream_large = percentile(at_large.stream_ms, 0.5);
  std::printf("  %-44s %8.3f ms %7.3f ms %10.2f  (target <= 2)\n", "stream next(), median",
              stream_small, stream_large, stream_large / stream_small);
  std::printf("  %-44s %8.3f ms %7.3f ms %10.2f\n", "stream next(), p99",
              percentile(at_small.stream_ms, 0.99), percentile(at_large.stream_ms, 0.99),
              percentile(at_large.stream_ms, 0.99) / percentile(at_small.stream_ms, 0.99));
  const double whole_small = percentile(at_small.whole_ms, 0.5);
  const double whole_large = percentile(at_large.whole_ms, 0.5);
  std::printf("  %-44s %8.3f ms %7.3f ms %10.2f\n", "the whole run each tick (before), median",
              whole_small, whole_large, whole_large / whole_small);
  std::printf("  %-44s %10.1f x %9.1f x\n", "before / stream", whole_small / stream_small,
              whole_large / stream_large);
  store->reset();
  std::filesystem::remove_all(dir);
  return 0;
}
