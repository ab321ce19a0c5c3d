#include "scenarios/engine/slurm_submitter.h"

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <system_error>

namespace fabric_chaos::scenarios {
namespace {

using core::Status;
using core::StatusCode;

std::string hostfileOf(const workload::SrunStep& step) {
  return step.argv.back() + ".hosts";  // next to the multi-prog file, which argv ends with
}

Status writeFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  out.close();
  if (!out) return core::errnoStatus(errno, "cannot write " + path);
  return Status::ok();
}

// `argv` with the cluster's configuration, entering `netns` first unless it is "".
std::vector<std::string> slurmCommand(const SlurmCluster& cluster, const std::string& netns,
                                      const std::vector<std::string>& argv,
                                      const std::vector<std::string>& env) {
  std::vector<std::string> out;
  if (!netns.empty()) out = {"nsenter", "--net=/run/netns/" + netns, "--"};
  out.push_back("/usr/bin/env");
  if (!cluster.conf.empty()) out.push_back("SLURM_CONF=" + cluster.conf);
  out.insert(out.end(), env.begin(), env.end());
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

class RealSlurmSubmitter : public SlurmSubmitter {
 public:
  RealSlurmSubmitter(sys::ProcessLauncher& processes, sys::CommandRunner& commands,
                     std::string step_dir)
      : processes_(processes), commands_(commands), step_dir_(std::move(step_dir)) {}

  core::Result<std::unique_ptr<sys::ChildProcess>> start(const SlurmCluster& cluster,
                                                         const workload::SrunStep& step) override {
    std::error_code ec;
    std::filesystem::create_directories(step_dir_, ec);
    if (ec)
      return Status(StatusCode::kInternal, "cannot create " + step_dir_ + ": " + ec.message());
    FC_RETURN_IF_ERROR(writeFile(step.argv.back(), step.multi_prog));
    FC_RETURN_IF_ERROR(writeFile(hostfileOf(step), step.hostfile));
    sys::SpawnSpec spawn;
    // srun itself runs in the submit namespace (setns, as the launcher does for ranks): the
    // I/O connections slurmstepd opens back to it must reach it there.
    spawn.netns = cluster.submit_netns;
    spawn.argv = slurmCommand(cluster, "", step.argv, {"SLURM_HOSTFILE=" + hostfileOf(step)});
    spawn.capture_stdout = true;
    spawn.capture_stderr = true;
    return processes_.spawn(spawn);
  }

  Status scancel(const SlurmCluster& cluster, const std::string& job_name,
                 std::optional<std::string> signal_name) override {
    const auto argv = slurmCommand(cluster, cluster.submit_netns,
                                   workload::scancelArgv(job_name, signal_name), {});
    auto result = commands_.run(argv, 15000);
    if (!result.isOk()) return result.status().withContext("scancel " + job_name);
    if (result->exit_code != 0) {
      return Status(StatusCode::kUnavailable, "scancel " + job_name + " exited with " +
                                                  std::to_string(result->exit_code) + ": " +
                                                  result->err);
    }
    return Status::ok();
  }

  void forget(const workload::SrunStep& step) override {
    std::error_code ec;
    std::filesystem::remove(step.argv.back(), ec);
    std::filesystem::remove(hostfileOf(step), ec);
  }

  std::string stepDir() const override { return step_dir_; }

 private:
  sys::ProcessLauncher& processes_;
  sys::CommandRunner& commands_;
  const std::string step_dir_;
};

}  // namespace

std::unique_ptr<SlurmSubmitter> makeSlurmSubmitter(sys::ProcessLauncher& processes,
                                                   sys::CommandRunner& commands,
                                                   std::string step_dir) {
  return std::make_unique<RealSlurmSubmitter>(processes, commands, std::move(step_dir));
}

}  // namespace fabric_chaos::scenarios
