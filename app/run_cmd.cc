// `fabric-chaos run`: the CI client. Wiring only: options, the HTTP API client, the real clock,
// SIGINT and the report files; the logic lives in client/ and is unit-tested there.

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <iostream>

#include "app/cli.h"
#include "app/stop_signals.h"
#include "client/api_client.h"
#include "client/follow.h"
#include "client/options.h"
#include "client/report.h"
#include "core/steady_clock.h"

namespace fabric_chaos::app {
namespace {

constexpr int kRequestTimeoutMs = 15000;

std::atomic<bool> g_interrupted{false};  // set by the SIGINT handler only

extern "C" void onSigint(int) {
  g_interrupted.store(true);
  // A second Ctrl-C kills the client at once (the server's lease still reverts the faults).
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigaction(SIGINT, &dfl, nullptr);
}

bool writeFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) {
    std::fprintf(stderr, "fabric-chaos run: cannot write %s\n", path.c_str());
    return false;
  }
  return true;
}

}  // namespace

int runMain(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  auto options = client::parseRunOptions(args, client::systemOptionSources());
  if (!options.isOk()) {
    std::fprintf(stderr, "fabric-chaos run: %s\n\n%s", options.status().message().c_str(),
                 client::kRunUsage);
    return client::kExitError;
  }
  if (options->help) {
    std::fputs(client::kRunUsage, stdout);
    return 0;
  }

  installStopHandlers(onSigint);

  net::TlsOptions tls;
  tls.ca_file = options->ca_file;
  tls.insecure = options->insecure;
  auto api = client::makeHttpApiClient(options->server, options->token, kRequestTimeoutMs, tls);
  core::SteadyClock clock;
  client::ProgressPrinter progress(std::cout, isatty(STDOUT_FILENO) == 1);
  client::FollowDeps deps;
  deps.api = api.get();
  deps.clock = &clock;
  deps.interrupted = [] { return g_interrupted.load(); };
  deps.progress = &progress;
  deps.out = &std::cout;

  client::Outcome outcome = client::runAndFollow(options.value(), deps);
  if (!options->wait) {
    if (!outcome.error.empty()) {
      std::fprintf(stderr, "fabric-chaos run: %s\n", outcome.error.c_str());
    }
    return outcome.exit_code;
  }

  std::cout << client::verdictReport(outcome) << std::flush;
  bool written = true;
  if (!options->junit_path.empty()) {
    written = writeFile(options->junit_path, client::junitXml(outcome)) && written;
  }
  if (!options->json_path.empty()) {
    written = writeFile(options->json_path, client::jsonReport(outcome).dump(2) + "\n") && written;
  }
  // The client's error is the verdict report's "error:" line: not repeated on stderr.
  return written ? outcome.exit_code : client::kExitError;
}

}  // namespace fabric_chaos::app
