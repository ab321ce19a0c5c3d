#pragma once
// What the benches share: a shell command's standard output (popen), for the tools they measure
// against (iperf3, tshark, perftest) and the lab's commands.

#include <cstdio>
#include <string>

namespace fabric_chaos::bench {

inline std::string shell(const std::string& command) {
  std::string out;
  if (FILE* pipe = ::popen(command.c_str(), "r")) {
    char buffer[4096];
    size_t got;
    while ((got = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) out.append(buffer, got);
    ::pclose(pipe);
  }
  return out;
}

}  // namespace fabric_chaos::bench
