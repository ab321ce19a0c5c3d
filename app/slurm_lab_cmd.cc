#include "app/slurm_lab_cmd.h"

#include <unistd.h>

#include <filesystem>

#include "lab/lab_common.h"

namespace fabric_chaos::app {
namespace {

using core::Status;
using core::StatusCode;

// What SlurmctldHost must name: the short name of this machine, which the controller namespace
// shares (only the network namespace is its own).
std::string machineShortHostname() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "";
  return lab::shortHostname(name);
}

lab::SlurmLabOptions slurmOptionsFor(const lab::LabOptions& options) {
  lab::SlurmLabOptions slurm;
  slurm.name = options.name;
  slurm.prefix = options.prefix;
  slurm.subnet = options.subnet;
  std::error_code ec;
  const auto state_dir = std::filesystem::absolute(options.state_dir, ec);
  slurm.state_dir = ec ? options.state_dir : state_dir.lexically_normal().string();
  while (slurm.state_dir.size() > 1 && slurm.state_dir.back() == '/') slurm.state_dir.pop_back();
  slurm.hostname = machineShortHostname();
  return slurm;
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) out += (out.empty() ? "" : ", ") + name;
  return out;
}

}  // namespace

LabSlurm::LabSlurm(sys::CommandRunner& runner, const lab::LabOptions& options)
    : options_(options),
      slurm_options_(slurmOptionsFor(options)),
      daemons_(sys::makeDaemonControl()),
      slurm_(runner, *daemons_, slurm_options_) {}

core::Result<scenarios::Fabric> LabSlurm::upWithLab(lab::NetnsLab& lab, const Progress& progress) {
  if (options_.topology != lab::LabTopology::kStar) {
    return Status(StatusCode::kInvalidArgument,
                  "--with-slurm needs the star topology, where the Slurm controller joins the "
                  "hosts' bridge");
  }
  scenarios::Fabric fabric = lab::describeLab(options_);
  // Input Slurm would refuse and missing tools, before anything is built.
  auto plan = lab::planSlurmLab(fabric, slurm_options_);
  if (!plan.isOk()) return plan.status();
  FC_RETURN_IF_ERROR(slurm_.checkPrerequisites());
  scenarios::Fabric with_slurm = fabric;
  with_slurm.slurm = plan->cluster;
  auto lab_status = lab.status();
  if (!lab_status.isOk()) return lab_status.status();
  if (lab_status->up && lab::readFabricFile(lab.fabricFile()) == scenarios::toJson(with_slurm)) {
    progress("lab " + options_.name + " is already up with its Slurm cluster's description");
  } else {
    // A cluster from before goes first, and leaves the fabric file describing only the lab,
    // which NetnsLab::up then keeps or rebuilds by its own rules.
    FC_RETURN_IF_ERROR(down(progress));
    auto built = lab.up(progress);
    if (!built.isOk()) return built.status();
    fabric = *built;
  }
  auto cluster = slurm_.up(fabric, progress);
  if (!cluster.isOk()) {
    progress("the namespace lab stays up without Slurm; `lab down` removes it");
    (void)forgetInFabricFile();
    return cluster.status();
  }
  fabric.slurm = *cluster;
  FC_RETURN_IF_ERROR(lab::writeFabricFile(options_.state_dir, options_.name, fabric));
  progress("fabric " + options_.name + " names its Slurm cluster (" + lab.fabricFile() +
           ", \"slurm\"); submit from its controller namespace: SLURM_CONF=" + cluster->conf +
           " nsenter --net=/run/netns/" + cluster->submit_netns + " srun -N" +
           std::to_string(fabric.hosts.size()) + " hostname");
  return fabric;
}

Status LabSlurm::forgetInFabricFile() {
  const std::string path = lab::fabricFilePath(options_.state_dir, options_.name);
  const std::optional<nlohmann::json> doc = lab::readFabricFile(path);
  if (!doc || !doc->contains("slurm")) return Status::ok();
  auto fabric = scenarios::fabricFromJson(*doc);
  if (!fabric.isOk()) return fabric.status().withContext(path);
  fabric->slurm.reset();
  return lab::writeFabricFile(options_.state_dir, options_.name, *fabric);
}

Status LabSlurm::down(const Progress& progress) {
  const Status stopped = slurm_.down(progress);
  const Status forgotten = forgetInFabricFile();
  return stopped.isOk() ? forgotten : stopped;
}

std::string LabSlurm::statusLine() {
  auto st = slurm_.status();
  if (!st.isOk()) return "slurm: unknown (" + st.status().message() + ")";
  const std::string& ctl = slurm_.layout().controller_netns;
  if (st->up) {
    return "slurm: up (munged; slurmctld in " + ctl + "; slurmd for " + joined(st->nodes) +
           "; SLURM_CONF=" + st->conf + ")";
  }
  if (!st->controller_netns && !st->munged && !st->slurmctld && st->running_nodes.empty() &&
      st->conf.empty()) {
    return "slurm: not running";
  }
  return "slurm: partly there (namespace " + ctl + (st->controller_netns ? " present" : " absent") +
         ", munged " + (st->munged ? "running" : "stopped") + ", slurmctld " +
         (st->slurmctld ? "running" : "stopped") + ", slurmd for " +
         std::to_string(st->running_nodes.size()) + " of " + std::to_string(st->nodes.size()) +
         " nodes); `lab up --with-slurm` rebuilds it, `lab down` removes it";
}

}  // namespace fabric_chaos::app
