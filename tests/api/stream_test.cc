// The run event stream (GET /v1/runs/{id}/stream) against a real ":memory:" store, with next()
// driven by hand in place of the transport's 500 ms timer: what each poll sends, that nothing is
// sent twice, and how the stream ends.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "server/api/handlers.h"
#include "store/store.h"
#include "tests/api/api_test_support.h"

namespace fabric_chaos::api {
namespace {

using nlohmann::json;

struct Message {
  std::string event;
  json data;
};

// Splits "event: x\ndata: {...}\n\n" blocks; SSE comments (": ...") are returned as event "".
std::vector<Message> parseSse(const std::string& text) {
  std::vector<Message> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find("\n\n", pos);
    EXPECT_NE(end, std::string::npos) << "unterminated block in: " << text;
    if (end == std::string::npos) break;
    std::string block = text.substr(pos, end - pos);
    pos = end + 2;
    Message message;
    size_t line_start = 0;
    while (line_start <= block.size()) {
      size_t line_end = block.find('\n', line_start);
      if (line_end == std::string::npos) line_end = block.size();
      std::string line = block.substr(line_start, line_end - line_start);
      line_start = line_end + 1;
      if (line.rfind("event: ", 0) == 0) {
        message.event = line.substr(7);
      } else if (line.rfind("data: ", 0) == 0) {
        message.data = json::parse(line.substr(6));
      } else {
        EXPECT_EQ(line.rfind(":", 0), 0u) << "unexpected line: " << line;
      }
    }
    out.push_back(std::move(message));
  }
  return out;
}

std::vector<std::string> eventNames(const std::vector<Message>& messages) {
  std::vector<std::string> names;
  for (const Message& m : messages) names.push_back(m.event);
  return names;
}

json scenarioFor(int hosts) {
  json host_list = json::array();
  for (int i = 0; i < hosts; ++i) host_list.push_back("h" + std::to_string(i));
  return json{{"version", 1}, {"name", "flap"}, {"workload", {{"hosts", host_list}}}};
}

// Only ApiFixture's store is used: the stream is opened through internal::openRunStream so that
// next() can be driven by hand.
class StreamTest : public testing::ApiFixture {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(openStore());
    deps_.store = store_.get();
    deps_.live = [this](int64_t run_id) -> json {
      std::lock_guard<std::mutex> lock(live_mu_);
      if (run_id != live_run_ || live_.is_null()) return nullptr;
      return live_;
    };
  }

  void setLive(int64_t run_id, json live) {
    std::lock_guard<std::mutex> lock(live_mu_);
    live_run_ = run_id;
    live_ = std::move(live);
  }

  int64_t createRun(int hosts = 2) {
    auto id = store_->createRun("flap", scenarioFor(hosts), "netns-lab");
    EXPECT_TRUE(id.isOk()) << id.status().toString();
    return id.isOk() ? *id : 0;
  }

  std::unique_ptr<core::EventStream> open(const std::string& id, Response* refusal) {
    internal::Context ctx{deps_, scenario_mu_, {}};
    Request request;
    request.method = "GET";
    request.target = "/v1/runs/" + id + "/stream";
    internal::Call call{request, {id}, {}};
    return internal::openRunStream(ctx, call, refusal);
  }

  // A finished run's stream sends everything in one final chunk: status, samples, timeline, end.
  std::vector<Message> finishedRunMessages(int64_t id) {
    auto stream = open(id);
    if (stream == nullptr) return {};
    auto chunk = stream->next();
    EXPECT_TRUE(chunk.done);
    auto messages = parseSse(chunk.text);
    EXPECT_EQ(eventNames(messages),
              (std::vector<std::string>{"status", "samples", "timeline", "end"}));
    if (messages.size() != 4) return {};
    return messages;
  }

  std::unique_ptr<core::EventStream> open(int64_t id) {
    Response refusal;
    refusal.status = 0;
    auto stream = open(std::to_string(id), &refusal);
    EXPECT_NE(stream, nullptr) << refusal.body;
    return stream;
  }

  ApiDeps deps_;
  std::mutex scenario_mu_;
  std::mutex live_mu_;
  int64_t live_run_ = 0;
  json live_;
};

TEST_F(StreamTest, UnknownOrMalformedRunIsRefused) {
  Response refusal;
  refusal.status = 0;
  EXPECT_EQ(open("42", &refusal), nullptr);
  EXPECT_EQ(refusal.status, 404);
  EXPECT_EQ(json::parse(refusal.body)["error"]["code"], "NOT_FOUND");
  EXPECT_THAT(refusal.body, ::testing::HasSubstr("run 42"));

  refusal.status = 0;
  EXPECT_EQ(open("abc", &refusal), nullptr);
  EXPECT_EQ(refusal.status, 400);
  EXPECT_THAT(refusal.body, ::testing::HasSubstr("run id"));
}

TEST_F(StreamTest, PollsSendOnlyWhatIsNew) {
  const int64_t id = createRun(2);
  auto stream = open(id);
  ASSERT_NE(stream, nullptr);
  EXPECT_EQ(stream->pollIntervalMs(), 500);

  // Queued: one status, then silence while nothing changes.
  auto chunk = stream->next();
  EXPECT_FALSE(chunk.done);
  auto messages = parseSse(chunk.text);
  ASSERT_EQ(eventNames(messages), std::vector<std::string>{"status"});
  EXPECT_EQ(messages[0].data, (json{{"state", "queued"}, {"live", nullptr}}));
  chunk = stream->next();
  EXPECT_FALSE(chunk.done);
  EXPECT_EQ(chunk.text, "");

  // In progress: the engine's live view arrives with the state change.
  ASSERT_TRUE(store_->setRunState(id, "baseline").isOk());
  setLive(id, json{{"state", "baseline"}, {"elapsed_ms", 100.0}, {"samples", 0}});
  ASSERT_TRUE(store_
                  ->appendSamples(id, {{0, 0, 0.0, 10.0, 1 << 20},
                                       {0, 1, 10.0, 10.0, 1 << 20},
                                       {1, 0, 0.0, 20.0, 1 << 20}})
                  .isOk());
  messages = parseSse(stream->next().text);
  ASSERT_EQ(eventNames(messages), (std::vector<std::string>{"status", "samples"}));
  EXPECT_EQ(messages[0].data["state"], "baseline");
  EXPECT_EQ(messages[0].data["live"]["elapsed_ms"], 100.0);
  const json& samples = messages[1].data["samples"];
  ASSERT_EQ(samples.size(), 3u);
  // Same shape as /samples, busbw for a ring of two: 2 * (n-1)/n * bytes / duration.
  EXPECT_EQ(samples[0]["rank"], 0);
  EXPECT_EQ(samples[0]["iteration"], 0);
  EXPECT_EQ(samples[0]["bytes"], 1 << 20);
  EXPECT_EQ(samples[0]["duration_ms"], 10.0);
  EXPECT_NEAR(samples[0]["busbw_gbps"].get<double>(), (1 << 20) / 10e-3 / 1e9, 1e-9);
  EXPECT_NEAR(samples[2]["busbw_gbps"].get<double>(), (1 << 20) / 20e-3 / 1e9, 1e-9);

  // Only the new iteration of rank 0 and the new event; the live view changed, so a status too.
  setLive(id, json{{"state", "injecting"}, {"elapsed_ms", 600.0}, {"samples", 4}});
  ASSERT_TRUE(store_->setRunState(id, "injecting").isOk());
  ASSERT_TRUE(store_->appendSamples(id, {{0, 2, 20.0, 10.0, 1 << 20}}).isOk());
  ASSERT_TRUE(store_->appendEvent({id, 15.0, 1000, "fault_applied", {{"step", 0}}}).isOk());
  messages = parseSse(stream->next().text);
  ASSERT_EQ(eventNames(messages), (std::vector<std::string>{"status", "samples", "timeline"}));
  EXPECT_EQ(messages[0].data["state"], "injecting");
  ASSERT_EQ(messages[1].data["samples"].size(), 1u);
  EXPECT_EQ(messages[1].data["samples"][0]["iteration"], 2);
  EXPECT_EQ(messages[2].data["events"], (json::array({{{"t_ms", 15.0},
                                                       {"wall_ms", 1000},
                                                       {"kind", "fault_applied"},
                                                       {"detail", {{"step", 0}}}}})));

  // Nothing new at all: nothing sent.
  EXPECT_EQ(stream->next().text, "");

  // An event that sorts before one already sent is still sent once.
  ASSERT_TRUE(store_->appendEvent({id, 5.0, 990, "rank_started", {{"rank", 1}}}).isOk());
  messages = parseSse(stream->next().text);
  ASSERT_EQ(eventNames(messages), std::vector<std::string>{"timeline"});
  ASSERT_EQ(messages[0].data["events"].size(), 1u);
  EXPECT_EQ(messages[0].data["events"][0]["kind"], "rank_started");
  EXPECT_EQ(stream->next().text, "");

  // Final: the state change, the last samples and events, then `end` with the summary.
  ASSERT_TRUE(store_->appendSamples(id, {{1, 1, 20.0, 20.0, 1 << 20}}).isOk());
  ASSERT_TRUE(store_->appendEvent({id, 30.0, 1015, "fault_reverted", {{"step", 0}}}).isOk());
  ASSERT_TRUE(store_->finishRun(id, "passed", 77.0, json{{"passed", true}}, "").isOk());
  setLive(id, nullptr);
  chunk = stream->next();
  EXPECT_TRUE(chunk.done);
  messages = parseSse(chunk.text);
  ASSERT_EQ(eventNames(messages),
            (std::vector<std::string>{"status", "samples", "timeline", "end"}));
  EXPECT_EQ(messages[0].data, (json{{"state", "passed"}, {"live", nullptr}}));
  ASSERT_EQ(messages[1].data["samples"].size(), 1u);
  EXPECT_EQ(messages[1].data["samples"][0]["rank"], 1);
  EXPECT_EQ(messages[1].data["samples"][0]["iteration"], 1);
  ASSERT_EQ(messages[2].data["events"].size(), 1u);
  EXPECT_EQ(messages[2].data["events"][0]["kind"], "fault_reverted");
  const json& end = messages[3].data;
  EXPECT_EQ(end["id"], id);
  EXPECT_EQ(end["state"], "passed");
  EXPECT_EQ(end["score"], 77.0);
  EXPECT_EQ(end["passed"], true);
  EXPECT_TRUE(end.contains("duration_ms"));

  // After the end the stream stays done and silent.
  chunk = stream->next();
  EXPECT_TRUE(chunk.done);
  EXPECT_EQ(chunk.text, "");
}

TEST_F(StreamTest, FinishedRunSendsEverythingAtOnce) {
  const int64_t id = createRun(3);
  ASSERT_TRUE(store_->setRunState(id, "baseline").isOk());
  std::vector<core::Sample> samples;
  for (int rank = 0; rank < 3; ++rank) {
    for (int i = 0; i < 4; ++i) samples.push_back({rank, i, 10.0 * i, 5.0, 4096});
  }
  ASSERT_TRUE(store_->appendSamples(id, samples).isOk());
  ASSERT_TRUE(store_->appendEvent({id, 1.0, 10, "fault_applied", json::object()}).isOk());
  ASSERT_TRUE(store_->appendEvent({id, 2.0, 11, "fault_reverted", json::object()}).isOk());
  ASSERT_TRUE(store_->finishRun(id, "failed", 10.0, json{{"passed", false}}, "").isOk());
  // An engine that still has a view of a finished run must not leak it into the stream.
  setLive(id, json{{"state", "analysing"}});

  auto messages = finishedRunMessages(id);
  ASSERT_EQ(messages.size(), 4u);
  EXPECT_EQ(messages[0].data, (json{{"state", "failed"}, {"live", nullptr}}));
  EXPECT_EQ(messages[1].data["samples"].size(), 12u);
  EXPECT_EQ(messages[2].data["events"].size(), 2u);
  EXPECT_EQ(messages[3].data["state"], "failed");
  EXPECT_EQ(messages[3].data["passed"], false);
}

// A finished run longer than a message: pages of 10 000 samples and 1 000 events, each polled
// at once (pollIntervalMs 0) until all went out, then the last pair and `end`. Every sample and
// event once, in the order stored.
TEST_F(StreamTest, AFinishedLongRunGoesOutPageByPageThenEnds) {
  const int64_t id = createRun(2);
  std::vector<core::Sample> samples;
  for (int i = 0; i < 12500; ++i) {
    for (int rank = 0; rank < 2; ++rank) samples.push_back({rank, i, 1.0 * i, 2.0, 4096});
  }
  ASSERT_TRUE(store_->appendSamples(id, samples).isOk());
  for (int i = 0; i < 1500; ++i) {
    ASSERT_TRUE(store_->appendEvent({id, 1.0 * i, i, "rank_heartbeat", {{"n", i}}}).isOk());
  }
  ASSERT_TRUE(store_->finishRun(id, "passed", 90.0, json{{"passed", true}}, "").isOk());

  auto stream = open(id);
  ASSERT_NE(stream, nullptr);
  std::vector<std::string> names;
  std::vector<size_t> sample_counts;
  std::vector<int64_t> seqs;
  int events = 0;
  bool done = false;
  for (int tick = 0; tick < 10 && !done; ++tick) {
    auto chunk = stream->next();
    done = chunk.done;
    if (!done) {
      EXPECT_EQ(stream->pollIntervalMs(), 0) << "more to send: poll again at once";
    }
    for (const Message& message : parseSse(chunk.text)) {
      names.push_back(message.event);
      if (message.event == "samples") {
        sample_counts.push_back(message.data["samples"].size());
        for (const json& sample : message.data["samples"]) seqs.push_back(sample["seq"]);
      }
      if (message.event == "timeline") {
        for (const json& event : message.data["events"]) {
          EXPECT_EQ(event["detail"]["n"], events);
          ++events;
        }
      }
    }
  }
  EXPECT_TRUE(done);
  EXPECT_EQ(sample_counts, (std::vector<size_t>{10000, 10000, 5000}));
  EXPECT_EQ(events, 1500);
  ASSERT_EQ(seqs.size(), 25000u);
  EXPECT_TRUE(std::is_sorted(seqs.begin(), seqs.end()));
  EXPECT_EQ(std::adjacent_find(seqs.begin(), seqs.end()), seqs.end());
  EXPECT_EQ(names, (std::vector<std::string>{"status", "samples", "timeline", "samples", "timeline",
                                             "samples", "timeline", "end"}));
}

TEST_F(StreamTest, FinishedRunWithNothingRecordedStillSendsTheEmptyPair) {
  const int64_t id = createRun();
  ASSERT_TRUE(store_->finishRun(id, "error", std::nullopt, json::object(), "no ranks").isOk());
  auto messages = finishedRunMessages(id);
  ASSERT_EQ(messages.size(), 4u);
  EXPECT_TRUE(messages[1].data["samples"].empty());
  EXPECT_TRUE(messages[2].data["events"].empty());
  EXPECT_EQ(messages[3].data["error"], "no ranks");
}

TEST_F(StreamTest, WithoutALiveViewTheStatusCarriesNull) {
  deps_.live = nullptr;
  const int64_t id = createRun();
  ASSERT_TRUE(store_->setRunState(id, "injecting").isOk());
  auto stream = open(id);
  ASSERT_NE(stream, nullptr);
  auto messages = parseSse(stream->next().text);
  ASSERT_EQ(eventNames(messages), std::vector<std::string>{"status"});
  EXPECT_EQ(messages[0].data, (json{{"state", "injecting"}, {"live", nullptr}}));
}

}  // namespace
}  // namespace fabric_chaos::api
