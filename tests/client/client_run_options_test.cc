// `fabric-chaos run` option parsing: every accepted form and every usage error, table-driven, with
// the environment and the files injected.

#include <gtest/gtest.h>

#include <map>

#include "client/options.h"

namespace fabric_chaos::client {
namespace {

using nlohmann::json;

struct Env {
  std::map<std::string, std::string> vars;
  std::map<std::string, std::string> files;
  std::vector<std::string> read;

  OptionSources sources() {
    OptionSources s;
    s.getenv = [this](const std::string& name) -> std::optional<std::string> {
      auto it = vars.find(name);
      if (it == vars.end()) return std::nullopt;
      return it->second;
    };
    s.readFile = [this](const std::string& path) -> core::Result<std::string> {
      read.push_back(path);
      auto it = files.find(path);
      if (it == files.end()) {
        return core::Status(core::StatusCode::kNotFound, "reading " + path + ": no such file");
      }
      return it->second;
    };
    return s;
  }
};

core::Result<RunOptions> parse(Env& env, std::vector<std::string> args) {
  return parseRunOptions(args, env.sources());
}

TEST(RunOptions, ScenarioWithEverything) {
  Env env;
  auto o = parse(env, {"--server",
                       "http://10.0.0.1:9000/",
                       "--token",
                       "fct_abc",
                       "--scenario",
                       "link-flap",
                       "--fabric=netns-lab",
                       "--gate",
                       "min_score=60",
                       "--gate",
                       "require_survival=false",
                       "--gate=max_recovery_ms=1500",
                       "--wait",
                       "--junit",
                       "out.xml",
                       "--json",
                       "out.json",
                       "--timeout",
                       "90",
                       "--poll-ms",
                       "200"});
  ASSERT_TRUE(o.isOk()) << o.status().toString();
  EXPECT_EQ(o->server, "http://10.0.0.1:9000");
  EXPECT_EQ(o->token, "fct_abc");
  EXPECT_EQ(o->kind, TargetKind::kScenario);
  EXPECT_EQ(o->name, "link-flap");
  EXPECT_EQ(o->fabric, "netns-lab");
  EXPECT_EQ(o->gates,
            (json{{"min_score", 60.0}, {"require_survival", false}, {"max_recovery_ms", 1500.0}}));
  EXPECT_TRUE(o->wait);
  EXPECT_EQ(o->junit_path, "out.xml");
  EXPECT_EQ(o->json_path, "out.json");
  EXPECT_DOUBLE_EQ(o->timeout_s, 90);
  EXPECT_EQ(o->poll_ms, 200);
}

TEST(RunOptions, DefaultsComeFromTheEnvironment) {
  Env env;
  env.vars = {{"FABRIC_CHAOS_SERVER", "http://ci-fabric:8080"},
              {"FABRIC_CHAOS_TOKEN", " fct_env\n"}};
  auto o = parse(env, {"--suite", "expansion-acceptance"});
  ASSERT_TRUE(o.isOk()) << o.status().toString();
  EXPECT_EQ(o->server, "http://ci-fabric:8080");
  EXPECT_EQ(o->token, "fct_env");
  EXPECT_EQ(o->kind, TargetKind::kSuite);
  EXPECT_FALSE(o->wait);
  EXPECT_EQ(o->poll_ms, 500);
  EXPECT_DOUBLE_EQ(o->timeout_s, 0);
}

TEST(RunOptions, NoServerAnywhereMeansTheLocalDefault) {
  Env env;
  auto o = parse(env, {"--scenario", "x"});
  ASSERT_TRUE(o.isOk());
  EXPECT_EQ(o->server, "http://127.0.0.1:8080");
  EXPECT_EQ(o->token, "");
}

TEST(RunOptions, TokenPrecedenceFlagThenFileThenEnvironment) {
  Env env;
  env.vars = {{"FABRIC_CHAOS_TOKEN", "fct_env"}};
  env.files = {{"/t", "fct_file\n"}};
  EXPECT_EQ(parse(env, {"--scenario", "x", "--token", "fct_flag"})->token, "fct_flag");
  EXPECT_EQ(parse(env, {"--scenario", "x", "--token-file", "/t"})->token, "fct_file");
  EXPECT_EQ(parse(env, {"--scenario", "x"})->token, "fct_env");
}

TEST(RunOptions, FileIsReadAndSentInline) {
  Env env;
  env.files = {{"s.json", R"({"version": 1, "name": "short-flap", "steps": []})"},
               {"anon.json", R"({"version": 1})"}};
  auto o = parse(env, {"--file", "s.json", "--wait"});
  ASSERT_TRUE(o.isOk()) << o.status().toString();
  EXPECT_EQ(o->kind, TargetKind::kFile);
  EXPECT_EQ(o->name, "short-flap");
  EXPECT_EQ(o->document["steps"], json::array());
  EXPECT_EQ(parse(env, {"--file", "anon.json"})->name, "inline");
}

TEST(RunOptions, TlsOptions) {
  Env env;
  auto o =
      parse(env, {"--server", "https://fc.lab:8443", "--scenario", "x", "--ca-file", "ca.pem"});
  ASSERT_TRUE(o.isOk()) << o.status().toString();
  EXPECT_EQ(o->ca_file, "ca.pem");
  EXPECT_FALSE(o->insecure);
  o = parse(env, {"--server", "https://fc.lab:8443", "--scenario", "x", "--insecure"});
  ASSERT_TRUE(o.isOk()) << o.status().toString();
  EXPECT_TRUE(o->insecure);
  EXPECT_EQ(o->ca_file, "");
}

TEST(RunOptions, HelpWinsOverMissingTarget) {
  Env env;
  EXPECT_TRUE(parse(env, {"--help"})->help);
  EXPECT_TRUE(parse(env, {"-h"})->help);
  EXPECT_TRUE(parse(env, {"--scenario", "a", "-h"})->help);
}

TEST(RunOptions, DashHAfterAValuedFlagIsItsValue) {
  Env env;
  auto o = parse(env, {"--scenario", "-h"});
  ASSERT_TRUE(o.isOk()) << o.status().toString();
  EXPECT_FALSE(o->help);
  EXPECT_EQ(o->name, "-h");
}

struct UsageCase {
  std::vector<std::string> args;
  std::string expected;  // a substring of the message
};

TEST(RunOptions, UsageErrorsNameTheFlag) {
  const std::vector<UsageCase> cases = {
      {{}, "say what to run"},
      {{"--scenario", "a", "--suite", "b"}, "exclude each other"},
      {{"--scenario", "a", "--file", "s.json"}, "exclude each other"},
      {{"--scenario"}, "--scenario needs a value"},
      {{"--scenario", ""}, "--scenario: empty name"},
      {{"--scenario", "a", "--bogus", "1"}, "unknown option --bogus"},
      {{"--scenario", "a", "stray"}, "unexpected argument \"stray\""},
      {{"--scenario", "a", "--"}, "unexpected argument \"--\""},
      {{"--scenario", "a", "--gate", "min_score"}, "expected KEY=VALUE"},
      {{"--scenario", "a", "--gate", "=5"}, "expected KEY=VALUE"},
      {{"--scenario", "a", "--gate", "min_score=high"}, "--gate min_score: value \"high\""},
      {{"--suite", "s", "--gate", "min_score=5"}, "--gate does not apply to --suite"},
      {{"--scenario", "a", "--junit", "x.xml"}, "need --wait"},
      {{"--scenario", "a", "--json", "x.json"}, "need --wait"},
      {{"--scenario", "a", "--timeout", "0"}, "--timeout: expected a positive number"},
      {{"--scenario", "a", "--timeout", "5s"}, "--timeout: expected a positive number"},
      {{"--scenario", "a", "--poll-ms", "1"}, "--poll-ms: expected 10 to 60000"},
      {{"--scenario", "a", "--token", "t", "--token-file", "/t"}, "exclude each other"},
      {{"--scenario", "a", "--token-file", "/missing"}, "--token-file: reading /missing"},
      {{"--scenario", "a", "--token-file", "/empty"}, "the file is empty"},
      {{"--scenario", "a", "--token", "two words"}, "one word"},
      {{"--file", "/missing"}, "--file: reading /missing"},
      {{"--file", "list.json"}, "not a JSON object"},
      {{"--file", "broken.json"}, "not a JSON object"},
      {{"--scenario", "a", "--wait=yes"}, "--wait takes no value"},
      {{"--scenario", "a", "--fabric", "f", "--fabric", "g"}, "--fabric given twice"},
      {{"--scenario", "a", "--server", "/"}, "--server: empty URL"},
      {{"--scenario", "a", "--insecure", "--ca-file", "c.pem"}, "exclude each other"},
  };
  for (const UsageCase& c : cases) {
    Env env;
    env.files = {{"/t", "fct_x"},
                 {"/empty", " \n"},
                 {"s.json", "{}"},
                 {"list.json", "[1]"},
                 {"broken.json", "{\"version\": "}};
    auto o = parse(env, c.args);
    std::string joined;
    for (const auto& a : c.args) joined += a + " ";
    ASSERT_FALSE(o.isOk()) << joined;
    EXPECT_EQ(o.status().code(), core::StatusCode::kInvalidArgument) << joined;
    EXPECT_NE(o.status().message().find(c.expected), std::string::npos)
        << joined << "-> " << o.status().message();
  }
}

TEST(RunOptions, TheTokenNeverAppearsInAUsageError) {
  Env env;
  auto o = parse(env, {"--token", "fct_secret", "--scenario", "a", "--timeout", "never"});
  ASSERT_FALSE(o.isOk());
  EXPECT_EQ(o.status().message().find("fct_secret"), std::string::npos);
}

TEST(RunOptions, ParseGateTypes) {
  json gates = json::object();
  ASSERT_TRUE(parseGate("min_retained=0.5", gates).isOk());
  ASSERT_TRUE(parseGate("require_survival=true", gates).isOk());
  ASSERT_TRUE(parseGate("min_score=1e2", gates).isOk());
  EXPECT_EQ(gates, (json{{"min_retained", 0.5}, {"require_survival", true}, {"min_score", 100.0}}));
}

}  // namespace
}  // namespace fabric_chaos::client
