#pragma once
// In-memory sys::Forwarding: a switch's ECMP choice is a function of the flow (by default: even
// source ports leave by "up0", odd ones by "up1"), every question is logged, and a test may make
// a namespace answer with an error. Not thread-safe.

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "injectors/sys/forwarding.h"

namespace fabric_chaos::fakes {

class FakeForwarding : public sys::Forwarding {
 public:
  using Choice = std::function<std::string(const std::string& netns,
                                           const sys::ArrivingTcpFlows& flows, int source_port)>;

  core::Result<std::vector<std::string>> egressInterfaces(
      const std::string& netns, const sys::ArrivingTcpFlows& flows,
      const std::vector<int>& source_ports) override {
    asked.push_back(netns + " " + flows.ingress + " " + flows.source + "->" + flows.destination +
                    ":" + std::to_string(flows.destination_port) + " x" +
                    std::to_string(source_ports.size()));
    if (auto it = errors.find(netns); it != errors.end()) return it->second;
    std::vector<std::string> out;
    for (int port : source_ports) out.push_back(choice(netns, flows, port));
    return out;
  }

  Choice choice = [](const std::string&, const sys::ArrivingTcpFlows&, int port) {
    return std::string(port % 2 == 0 ? "up0" : "up1");
  };
  std::map<std::string, core::Status> errors;  // by namespace
  std::vector<std::string> asked;              // "<netns> <ingress> <src>-><dst>:<dport> x<n>"
};

}  // namespace fabric_chaos::fakes
