#pragma once
// incast: a long-running fault on a traffic set (one sink, N sources), over TCP or RC QPs
// (params.transport). apply starts `<self_exe> traffic sink` in the sink's namespace, listening on
// the sink interface's IPv4 address, then `<self_exe> traffic source` in each source's namespace
// (app/traffic_cmd.cc), each an emitter (injectors/sys/emitters.h); revert stops the sources,
// then the sink; observe returns every generator's health and last report, each source's goodput
// and Jain's fairness index over them. On a set cut into parts (endpoints behind several agents)
// each agent does this for its part only. Start-up recovery stops stray generators through the
// emitters' records, by their keys.

#include <string>
#include <vector>

#include "injectors/injector.h"

namespace fabric_chaos::sys {
class Emitters;
class LinkControl;
}  // namespace fabric_chaos::sys

namespace fabric_chaos::injectors {

class Incast : public Injector {
 public:
  static constexpr const char* kKind = "incast";

  Incast(sys::LinkControl* links, sys::Emitters* emitters, std::string self_exe)
      : links_(links), emitters_(emitters), self_exe_(std::move(self_exe)) {}

  const KindSpec& spec() const override;
  KindInfo info() const override;
  core::Status validate(const json& params) const override;
  // Checks that every endpoint exists and that the sink has an IPv4 address; the prior is
  // {"sink_address": ...} (nothing of the system changes).
  core::Result<json> capture(const Fault& fault) override;
  // Starts the sink, then the sources; when one fails, stops those it started. Generators already
  // running for this target are left as they are.
  core::Status apply(const Fault& fault) override;
  // Stops every source, then the sink, including generators a crashed incarnation left.
  core::Status revert(const Fault& fault, const json& prior) override;
  // TrafficGenerators::observe (injectors/traffic/traffic_generators.h): every generator's
  // health and last report, each source's goodput and Jain's fairness index over them.
  core::Result<json> observe(const Fault& fault) override;

  // The generators' command lines for one fault (defaults applied): pure, for tests.
  static std::vector<std::string> sinkArgv(const std::string& self_exe,
                                           const std::string& sink_address, const json& params);
  static std::vector<std::string> sourceArgv(const std::string& self_exe,
                                             const std::string& sink_address, const json& params);

 private:
  sys::LinkControl* links_;
  sys::Emitters* emitters_;
  std::string self_exe_;
};

}  // namespace fabric_chaos::injectors
