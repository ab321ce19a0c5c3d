#pragma once
// The real `fabric-chaos agent` binary as a child process of a test, its output collected: the
// port it says it listens on, and its exit on a signal. SIGKILLed if a test leaves it running.

#include <regex>

#include "tests/privileged/support.h"

namespace fabric_chaos::agent {

class AgentProcess : public fabric_chaos::testing::ChildProcess {
 public:
  using ChildProcess::ChildProcess;
  using ChildProcess::signalAndWait;

  // The port from "fabric-chaos agent listening on 127.0.0.1:PORT"; 0 if it never says so.
  int waitForPort(int timeout_ms) {
    static const std::regex kListening(R"(fabric-chaos agent listening on 127\.0\.0\.1:(\d+))");
    return ChildProcess::waitForPort(kListening, timeout_ms, 20);
  }

  // Sends signo (0: none) and returns the exit code (128+signal when killed), -1 on timeout.
  int signalAndWait(int signo, int timeout_ms) {
    return ChildProcess::signalAndWait(signo, timeout_ms, /*kill_on_timeout=*/false);
  }
};

}  // namespace fabric_chaos::agent
