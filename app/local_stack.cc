#include "app/local_stack.h"

#include <pthread.h>

#include <filesystem>
#include <system_error>

namespace fabric_chaos::app {

sigset_t blockStopSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);
  return signals;
}

std::string selfExePath() {
  std::error_code ec;
  return std::filesystem::read_symlink("/proc/self/exe", ec).string();
}

LocalStack::LocalStack(const std::string& self_exe, const std::string& log_dir)
    : links(sys::makeNetlinkLinkControl()),
      nftables(sys::makeLibNftables()),
      qdiscs(sys::makeNetlinkQdiscs()),
      registry(injectors::makeRegistry({links.get(), nftables.get(), qdiscs.get()})),
      launcher(sys::makeForkExecLauncher()),
      local_agent(*registry, *launcher, {self_exe, log_dir}) {}

}  // namespace fabric_chaos::app
