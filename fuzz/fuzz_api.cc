// libFuzzer target: the /v1 handlers (api::Api over a ":memory:" store, --no-auth, fake run,
// suite and fabric services). Input: a first line "METHOD TARGET", the rest is the body. Every
// answer must be 2xx/3xx/4xx, or 501/503; an error must be {"error": {"code", "message"}} with a
// message. A 500 (an exception or a bug in a handler) or a malformed error aborts, so the fuzzer
// reports it with the input that caused it. Event streams are opened and polled a few times.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "core/http_message.h"
#include "server/api/api.h"
#include "store/store.h"
#include "tests/fakes/fake_kinds.h"
#include "tests/fakes/fake_services.h"

namespace {

namespace api = fabric_chaos::api;
namespace core = fabric_chaos::core;
namespace fakes = fabric_chaos::fakes;
namespace scenarios = fabric_chaos::scenarios;
namespace store = fabric_chaos::store;
using core::Status;
using core::StatusCode;
using nlohmann::json;

class FakeSuiteService : public scenarios::SuiteService {
 public:
  core::Result<int64_t> submitSuite(const std::string&, const json&, const std::string&) override {
    return next_id_++;
  }
  core::Status abortSuite(int64_t id) override {
    if (id < 1 || id >= next_id_) {
      return Status(StatusCode::kNotFound, "suite run " + std::to_string(id) + " not found");
    }
    return Status::ok();
  }

 private:
  int64_t next_id_ = 1;
};

json flapScenario(const std::string& name) {
  return json{{"version", 1},
              {"name", name},
              {"baseline_ms", 1000},
              {"recovery_ms", 1000},
              {"steps",
               {{{"kind", "link_flap"},
                 {"target", {{"host", "h1"}}},
                 {"at_ms", 0},
                 {"params", {{"down_ms", 100}, {"up_ms", 100}, {"count", 1}}}}}}};
}

[[noreturn]] void fail(const std::string& what, const api::Request& request,
                       const api::Response& response) {
  std::fprintf(stderr, "fuzz_api: %s\nrequest: %s %s\nbody: %s\nresponse %d: %s\n", what.c_str(),
               request.method.c_str(), request.target.c_str(), request.body.c_str(),
               response.status, response.body.c_str());
  std::abort();
}

void check(const api::Request& request, const api::Response& response) {
  const int status = response.status;
  if (status < 200 || status > 599) fail("status out of range", request, response);
  if (status >= 500 && status != 501 && status != 503) fail("server error", request, response);
  if (status < 400) return;
  const json body = json::parse(response.body, nullptr, false);
  if (!body.is_object() || !body.contains("error") || !body["error"].is_object() ||
      !body["error"].contains("code") || !body["error"]["code"].is_string() ||
      !body["error"].contains("message") || !body["error"]["message"].is_string() ||
      body["error"]["message"].get<std::string>().empty()) {
    fail("error response without {\"error\": {\"code\", \"message\"}}", request, response);
  }
}

struct World {
  std::unique_ptr<store::Store> db;
  fakes::FakeRunService runs;
  fakes::FakeFabricCatalog fabrics;
  FakeSuiteService suites;
  std::unique_ptr<api::Api> api;

  World() {
    auto opened = store::Store::open(":memory:");
    if (!opened.isOk()) {
      std::fprintf(stderr, "fuzz_api: cannot open the store: %s\n",
                   opened.status().toString().c_str());
      std::abort();
    }
    db = std::move(opened).value();
    fabrics.add(fakes::FakeFabricCatalog::netnsLab(4));
    (void)db->putScenario("link-flap", flapScenario("link-flap"), true);
    (void)db->putScenario("my-flap", flapScenario("my-flap"), false);
    // One finished run with samples and events, so that the run routes have data to show.
    auto id = db->createRun("my-flap", flapScenario("my-flap"), "netns-lab");
    if (id.isOk()) {
      (void)db->setRunState(*id, "running");
      std::vector<core::Sample> samples;
      for (int rank = 0; rank < 2; ++rank) {
        for (int i = 0; i < 3; ++i) samples.push_back({rank, i, 10.0 * i, 8.0 + rank, 1 << 20});
      }
      (void)db->appendSamples(*id, samples);
      (void)db->appendEvent({*id, 5.0, 1000, "fault_applied", {{"step", 0}}});
      (void)db->finishRun(*id, "passed", 87.5, json{{"analysis", {{"score", 87.5}}}}, "");
    }
    api::ApiDeps deps;
    deps.store = db.get();
    deps.runs = &runs;
    deps.fabrics = &fabrics;
    deps.suites = &suites;
    deps.capabilities = [] {
      return std::vector<fabric_chaos::injectors::KindInfo>{
          {"link_flap", "takes a link down and up", true, "", "netlink"},
          {"packet_loss", "drops packets", false, "nftables is missing", "nftables"}};
    };
    deps.kinds = fakes::sameForEveryFabric(fakes::fakeKindCatalog({"link_flap", "packet_loss"}));
    deps.live = [](int64_t) { return json(nullptr); };
    deps.version = "fuzz";
    deps.require_auth = false;
    api = std::make_unique<api::Api>(deps);
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static World* world = new World();  // one store for the process: state carries over
  const std::string input(reinterpret_cast<const char*>(data), size);
  const size_t eol = input.find('\n');
  const std::string line = input.substr(0, eol);
  const size_t space = line.find(' ');
  if (space == std::string::npos) return 0;
  api::Request request;
  request.method = line.substr(0, space);
  request.target = line.substr(space + 1);
  if (!request.target.empty() && request.target.back() == '\r') request.target.pop_back();
  if (eol != std::string::npos) request.body = input.substr(eol + 1);
  request.headers["host"] = "127.0.0.1";
  if (!request.body.empty()) request.headers["content-type"] = "application/json";

  api::Response refusal;
  refusal.status = 0;
  if (auto stream = world->api->openStream(request, &refusal)) {
    for (int i = 0; i < 3; ++i) {
      core::EventStream::Chunk chunk = stream->next();
      if (chunk.done) break;
    }
    return 0;
  }
  if (refusal.status != 0) {
    check(request, refusal);
    return 0;
  }
  check(request, world->api->handle(request));
  return 0;
}
