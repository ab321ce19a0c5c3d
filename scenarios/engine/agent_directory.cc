#include "scenarios/engine/agent_directory.h"

namespace fabric_chaos::scenarios {

AgentRef agentForTarget(const Fabric& fabric, const ResolvedTarget& target) {
  if (target.side != LinkSide::kHost) return AgentRef{};
  const Host* host = fabric.findHost(target.host);
  return host == nullptr ? AgentRef{} : AgentRef{host->agent, host->agent_token_file};
}

}  // namespace fabric_chaos::scenarios
