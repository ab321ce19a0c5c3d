#pragma once
// An independent observer of 802.1Qbb frames for the privileged tests: tshark on one port.

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "tests/privileged/support.h"

namespace fabric_chaos::testing {

struct PfcFrameSeen {
  double epoch_s = 0;
  int class_enable = 0;
  int pause_c3 = -1;
};

// tshark in a namespace, writing one line per PFC frame seen on a port: when, the class-enable
// vector and priority 3's pause time, as Wireshark decodes them.
class PfcCapture {
 public:
  PfcCapture(const std::string& dir, const std::string& netns, const std::string& port)
      : file_(dir + "/pfc-" + port) {
    const std::string command =
        "timeout 120 ip netns exec " + netns + " tshark -l -n -i " + port +
        " -f 'ether proto 0x8808' -T fields -E separator=, -e frame.time_epoch"
        " -e macc.cbfc.enbv -e macc.cbfc.pause_time.c3 > " +
        file_ + " 2>" + file_ + ".err & echo $!";
    pid_ = std::atoi(runShell(command).out.c_str());
    // tshark needs a moment before it captures; it says so on stderr.
    waitFor([&] { return readFile(file_ + ".err").find("Capturing on") != std::string::npos; },
            20000);
  }
  ~PfcCapture() { stop(); }
  void stop() {
    if (pid_ > 0) {
      runShell("kill -INT " + std::to_string(pid_) +
               "; sleep 0.5; pkill -INT -f 'tshark -l -n -i'");
      pid_ = 0;
    }
  }
  bool started() const {
    return readFile(file_ + ".err").find("Capturing on") != std::string::npos;
  }
  std::vector<PfcFrameSeen> frames() const {
    std::vector<PfcFrameSeen> out;
    std::istringstream lines(readFile(file_));
    std::string line;
    while (std::getline(lines, line)) {
      PfcFrameSeen f;
      char enbv[32] = {0};
      if (std::sscanf(line.c_str(), "%lf,%31[^,],%d", &f.epoch_s, enbv, &f.pause_c3) < 2) continue;
      f.class_enable = static_cast<int>(std::strtol(enbv, nullptr, 0));
      out.push_back(f);
    }
    return out;
  }

 private:
  std::string file_;
  int pid_ = 0;
};

}  // namespace fabric_chaos::testing
