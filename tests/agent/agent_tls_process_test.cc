// The real `fabric-chaos agent` over HTTPS with client certificates (--tls-cert, --tls-key,
// --tls-client-ca), and `serve` reaching it with --agent-ca/--agent-cert/--agent-key. The
// certificates are made by the openssl command-line tool and the agent is probed with curl, so
// neither side of the check is our own TLS code. Loopback only; no fault is applied.

#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "agent/remote_agent.h"
#include "tests/agent/agent_process.h"
#include "tests/privileged/support.h"

namespace fabric_chaos::agent {
namespace {

using fabric_chaos::testing::runShell;
using nlohmann::json;

constexpr char kToken[] = "tls-process-test-token-0123456789";

// A CA, the agent's server certificate for 127.0.0.1 and the controller's client certificate it
// signed, plus a second CA with a client certificate of its own (a stranger's).
bool makeCertificates(const std::string& dir, std::string* log) {
  const std::string script = "(set -e; cd '" + dir + "'\n" + R"(
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1"; }
ca() { key "$1.key"; openssl req -x509 -new -key "$1.key" -out "$1.crt" -days 2 -subj "/CN=$1"; }
leaf() {  # name ca extensions
  key "$1.key"
  openssl req -new -key "$1.key" -out "$1.csr" -subj "/CN=$1"
  printf '%s\n' "$3" > "$1.ext"
  openssl x509 -req -in "$1.csr" -CA "$2.crt" -CAkey "$2.key" -CAcreateserial -out "$1.crt" \
    -days 2 -extfile "$1.ext"
}
ca ca
ca stranger-ca
leaf agent ca 'subjectAltName=IP:127.0.0.1
extendedKeyUsage=serverAuth'
leaf controller ca 'extendedKeyUsage=clientAuth'
leaf stranger stranger-ca 'extendedKeyUsage=clientAuth'
)" + std::string(") 2>&1");
  auto out = runShell(script);
  *log = out.out;
  return out.exit_code == 0;
}

class AgentTls : public fabric_chaos::testing::BinaryProcessTest {
 protected:
  void SetUp() override {
    BinaryProcessTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    std::ofstream(dir_ + "/token") << kToken << "\n";
    std::string log;
    ASSERT_TRUE(makeCertificates(dir_, &log)) << log;
  }

  std::string file(const std::string& name) const { return dir_ + "/" + name; }

  std::vector<std::string> agentArgs(std::vector<std::string> tls) {
    std::vector<std::string> out{binary_,        "agent",       "--listen",    "127.0.0.1:0",
                                 "--token-file", file("token"), "--state-dir", file("state"),
                                 "--allow",      "fc-none0",    "--mgmt-if",   "lo"};
    out.insert(out.end(), tls.begin(), tls.end());
    return out;
  }

  std::vector<std::string> mutualTls() {
    return {"--tls-cert",      file("agent.crt"), "--tls-key",
            file("agent.key"), "--tls-client-ca", file("ca.crt")};
  }

  // curl's exit code and output for GET /agent/v1/info with these extra options.
  fabric_chaos::testing::CommandOutput curlInfo(int port, const std::string& options,
                                                const std::string& scheme = "https") {
    return runShell("curl -sS --max-time 10 -H 'Authorization: Bearer " + std::string(kToken) +
                    "' " + options + " " + scheme + "://127.0.0.1:" + std::to_string(port) +
                    "/agent/v1/info 2>&1");
  }
};

TEST_F(AgentTls, OnlyAClientHoldingTheControllersCertificateGetsAnAnswer) {
  AgentProcess agent(agentArgs(mutualTls()));
  const int port = agent.waitForPort(60000);
  ASSERT_GT(port, 0) << agent.output();
  EXPECT_NE(agent.output().find("(https, client certificates signed by " + file("ca.crt") + ")"),
            std::string::npos)
      << agent.output();

  const std::string trust = "--cacert " + file("ca.crt");
  auto held = curlInfo(
      port, trust + " --cert " + file("controller.crt") + " --key " + file("controller.key"));
  ASSERT_EQ(held.exit_code, 0) << held.out;
  EXPECT_GT(json::parse(held.out)["agent_now_ns"].get<int64_t>(), 0) << held.out;

  // No certificate, a stranger's, or plain HTTP: no answer at all, whatever the token.
  auto without = curlInfo(port, trust);
  EXPECT_NE(without.exit_code, 0) << without.out;
  EXPECT_EQ(without.out.find("agent_now_ns"), std::string::npos) << without.out;
  auto stranger =
      curlInfo(port, trust + " --cert " + file("stranger.crt") + " --key " + file("stranger.key"));
  EXPECT_NE(stranger.exit_code, 0) << stranger.out;
  EXPECT_EQ(stranger.out.find("agent_now_ns"), std::string::npos) << stranger.out;
  auto plain = curlInfo(port, "", "http");
  EXPECT_EQ(plain.out.find("agent_now_ns"), std::string::npos) << plain.out;

  // The controller checks the agent too: another CA's trust store refuses its certificate
  // (curl's 60: peer certificate cannot be authenticated).
  auto wrong_trust =
      curlInfo(port, "--cacert " + file("stranger-ca.crt") + " --cert " + file("controller.crt") +
                         " --key " + file("controller.key"));
  EXPECT_EQ(wrong_trust.exit_code, 60) << wrong_trust.out;

  EXPECT_EQ(agent.signalAndWait(SIGTERM, 15000, false), 0) << agent.output();
}

TEST_F(AgentTls, TheControllersClientPresentsItsCertificateAndChecksTheAgents) {
  AgentProcess agent(agentArgs(mutualTls()));
  const int port = agent.waitForPort(60000);
  ASSERT_GT(port, 0) << agent.output();
  RemoteAgentOptions options;
  options.base_url = "https://127.0.0.1:" + std::to_string(port);
  options.token = kToken;
  options.tls.ca_file = file("ca.crt");
  options.tls.cert_file = file("controller.crt");
  options.tls.key_file = file("controller.key");
  auto info = fetchRemoteAgentInfo(options);
  ASSERT_TRUE(info.isOk()) << info.status().toString();
  EXPECT_FALSE((*info)["hostname"].get<std::string>().empty());

  RemoteAgentOptions no_certificate = options;
  no_certificate.tls.cert_file.clear();
  no_certificate.tls.key_file.clear();
  EXPECT_FALSE(fetchRemoteAgentInfo(no_certificate).isOk());

  RemoteAgentOptions wrong_ca = options;
  wrong_ca.tls.ca_file = file("stranger-ca.crt");
  auto refused = fetchRemoteAgentInfo(wrong_ca);
  ASSERT_FALSE(refused.isOk());
  EXPECT_NE(refused.status().message().find("certificate verify failed"), std::string::npos)
      << refused.status().toString();

  RemoteAgentOptions half = options;
  half.tls.key_file.clear();
  auto half_refused = fetchRemoteAgentInfo(half);
  ASSERT_FALSE(half_refused.isOk());
  EXPECT_NE(half_refused.status().message().find("needs both a certificate and a key"),
            std::string::npos)
      << half_refused.status().toString();
}

TEST_F(AgentTls, ServeReachesAnHttpsAgentWithItsAgentCaAndClientCertificate) {
  AgentProcess agent(agentArgs(mutualTls()));
  const int agent_port = agent.waitForPort(60000);
  ASSERT_GT(agent_port, 0) << agent.output();
  // A fabric of one real host whose agent speaks HTTPS, as an operator would register it.
  std::filesystem::create_directories(file("serve/state/fabrics"));
  const json fabric = {{"name", "fleet"},
                       {"kind", "real"},
                       {"hosts",
                        {{{"name", "node0"},
                          {"netns", ""},
                          {"agent", "https://127.0.0.1:" + std::to_string(agent_port)},
                          {"agent_token_file", file("token")},
                          {"nics", {{{"name", "fc-none0"}, {"address", "127.0.0.1"}}}},
                          {"labels", json::object()}}}},
                       {"switches", json::array()},
                       {"links", json::array()}};
  std::ofstream(file("serve/state/fabrics/fleet.json")) << fabric.dump(2);

  for (const bool with_certificate : {true, false}) {
    std::vector<std::string> args{"--no-auth", "--agent-ca", file("ca.crt")};
    if (with_certificate) {
      args.insert(args.end(),
                  {"--agent-cert", file("controller.crt"), "--agent-key", file("controller.key")});
    }
    const std::string dir = file(with_certificate ? "serve" : "serve-without");
    if (!with_certificate) {
      std::filesystem::create_directories(dir + "/state/fabrics");
      std::filesystem::copy_file(file("serve/state/fabrics/fleet.json"),
                                 dir + "/state/fabrics/fleet.json");
    }
    fabric_chaos::testing::ServeProcess serve(args, dir);
    const int port = serve.waitForPort(60000);
    ASSERT_GT(port, 0) << serve.output();
    auto reply = fabric_chaos::testing::httpRequest(port, "GET", "/v1/fabrics/fleet");
    ASSERT_EQ(reply.status, 200) << reply.body;
    const json host_agent = reply.json()["hosts"][0]["agent"];
    if (with_certificate) {
      EXPECT_EQ(host_agent["reachable"], true) << host_agent.dump();
      EXPECT_FALSE(host_agent["hostname"].get<std::string>().empty()) << host_agent.dump();
    } else {
      // Without the client certificate the agent does not let serve in, and serve says so.
      EXPECT_EQ(host_agent["reachable"], false) << host_agent.dump();
      EXPECT_FALSE(host_agent["error"].get<std::string>().empty()) << host_agent.dump();
    }
    EXPECT_EQ(serve.stop(30000), 0) << serve.output();
  }
  EXPECT_EQ(agent.signalAndWait(SIGTERM, 15000, false), 0) << agent.output();
}

TEST_F(AgentTls, RefusesClientCertificatesWithoutHttpsAndHalfAKeyPair) {
  AgentProcess no_tls(agentArgs({"--tls-client-ca", file("ca.crt")}));
  EXPECT_EQ(no_tls.signalAndWait(0, 15000, false), 2) << no_tls.output();
  EXPECT_NE(no_tls.output().find("--tls-client-ca needs HTTPS"), std::string::npos)
      << no_tls.output();

  AgentProcess half(agentArgs({"--tls-cert", file("agent.crt")}));
  EXPECT_EQ(half.signalAndWait(0, 15000, false), 2) << half.output();
  EXPECT_NE(half.output().find("--tls-cert and --tls-key go together"), std::string::npos)
      << half.output();

  // A client CA that is not a certificate file: the agent says which file and exits 1.
  std::ofstream(file("junk.pem")) << "not a certificate\n";
  AgentProcess junk(agentArgs({"--tls-cert", file("agent.crt"), "--tls-key", file("agent.key"),
                               "--tls-client-ca", file("junk.pem")}));
  EXPECT_EQ(junk.signalAndWait(0, 30000, false), 1) << junk.output();
  EXPECT_NE(junk.output().find("cannot load client CA file " + file("junk.pem")), std::string::npos)
      << junk.output();
}

}  // namespace
}  // namespace fabric_chaos::agent
