#include "injectors/sys/ib_port_command.h"

namespace fabric_chaos::sys {
namespace {

using core::Status;
using core::StatusCode;

constexpr int kCommandTimeoutMs = 30000;  // a discovery of a large subnet, then one Set
constexpr char kPrefix[] = "fabric-chaos ib-port: ";

class ProcessIbPortCommand : public IbPortCommand {
 public:
  ProcessIbPortCommand(CommandRunner* runner, std::string self_exe)
      : runner_(runner), self_exe_(std::move(self_exe)) {}

  core::Result<nlohmann::json> run(const std::string& node, int port,
                                   IbPortCommandAction action) override {
    const auto argv = ibPortArgv(self_exe_, node, port, action);
    auto result = runner_->run(argv, kCommandTimeoutMs);
    if (!result.isOk()) return result.status();
    if (result->exit_code != 0) {
      std::string reason = result->err;
      if (reason.rfind(kPrefix, 0) == 0) reason = reason.substr(sizeof(kPrefix) - 1);
      while (!reason.empty() && (reason.back() == '\n' || reason.back() == ' ')) reason.pop_back();
      const bool timed_out = reason.find("answers on none") != std::string::npos ||
                             reason.find("no answer") != std::string::npos;
      return Status(
          timed_out ? StatusCode::kTimeout : StatusCode::kFailedPrecondition,
          node + " port " + std::to_string(port) + ": " +
              (reason.empty() ? joinArgv(argv) + " exited " + std::to_string(result->exit_code)
                              : reason));
    }
    nlohmann::json reply = nlohmann::json::parse(result->out, nullptr, false);
    if (!reply.is_object() || !reply.contains("after")) {
      return Status(StatusCode::kInternal,
                    joinArgv(argv) + " printed no reply: \"" + result->out + "\"");
    }
    return reply;
  }

 private:
  CommandRunner* runner_;
  std::string self_exe_;
};

}  // namespace

std::vector<std::string> ibPortArgv(const std::string& self_exe, const std::string& node, int port,
                                    IbPortCommandAction action) {
  const char* flag = action == IbPortCommandAction::kDisable  ? "--disable"
                     : action == IbPortCommandAction::kEnable ? "--enable"
                                                              : "--query";
  return {self_exe, "ib-port", "--node", node, "--port", std::to_string(port), flag};
}

std::unique_ptr<IbPortCommand> makeIbPortCommand(CommandRunner* runner, std::string self_exe) {
  return std::make_unique<ProcessIbPortCommand>(runner, std::move(self_exe));
}

}  // namespace fabric_chaos::sys
