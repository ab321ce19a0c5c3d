#include "lab/vm_lab.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <sstream>
#include <thread>

#include "injectors/sys/netns.h"
#include "lab/ecn_model.h"
#include "lab/lab_common.h"
#include "lab/pfc_agent.h"
#include "lab/port_model.h"

namespace fabric_chaos::lab {
namespace {

using core::Status;
using core::StatusCode;
namespace fs = std::filesystem;

// The interface names in `ip -o link show` output that `keep` accepts.
std::vector<std::string> linksIn(const std::string& ip_link_output,
                                 const std::function<bool(const std::string&)>& keep) {
  std::vector<std::string> names;
  std::istringstream lines(ip_link_output);
  std::string line;
  while (std::getline(lines, line)) {
    auto colon = line.find(": ");
    if (colon == std::string::npos) continue;
    std::string ifname = line.substr(colon + 2, line.find(':', colon + 2) - colon - 2);
    ifname = ifname.substr(0, ifname.find('@'));
    if (keep(ifname)) names.push_back(ifname);
  }
  return names;
}

// Whether `name` is one of a VM lab's switch namespaces, star or leaf-spine, whatever its size:
// <prefix>-sw0, <prefix>-l<i>, <prefix>-s<j>.
bool isSwitchNamespace(const std::string& prefix, const std::string& name) {
  static const std::regex kSwitch("sw0|[ls][0-9]+");
  return name.rfind(prefix + "-", 0) == 0 &&
         std::regex_match(name.substr(prefix.size() + 1), kSwitch);
}

constexpr IpErrorRule kIpErrors[] = {{"Operation not permitted", StatusCode::kPermissionDenied},
                                     {"not supported", StatusCode::kNotSupported},
                                     {"does not exist", StatusCode::kNotFound},
                                     {"Cannot find device", StatusCode::kNotFound}};

}  // namespace

namespace {

// A running (not zombie) process.
bool alive(pid_t pid) {
  if (pid <= 0) return false;
  std::string stat = readTextFile("/proc/" + std::to_string(pid) + "/stat");
  auto close_paren = stat.rfind(')');
  if (close_paren == std::string::npos || close_paren + 2 >= stat.size()) return false;
  const char state = stat[close_paren + 2];
  return state != 'Z' && state != 'X';
}

std::vector<std::string> cmdlineOf(pid_t pid) {
  std::string raw = readTextFile("/proc/" + std::to_string(pid) + "/cmdline");
  std::vector<std::string> args;
  std::string current;
  for (char c : raw) {
    if (c == '\0') {
      args.push_back(current);
      current.clear();
    } else {
      current += c;
    }
  }
  if (!current.empty()) args.push_back(current);
  return args;
}

pid_t readPidFile(const std::string& path) {
  std::string text = trimRight(readTextFile(path));
  if (text.empty()) return -1;
  try {
    return static_cast<pid_t>(std::stol(text));
  } catch (const std::exception&) {
    return -1;
  }
}

// The last line of a console log that says something about the guest, for error messages.
std::string lastGuestLine(const std::string& console) {
  std::istringstream lines(console);
  std::string line;
  std::string last;
  while (std::getline(lines, line)) {
    line = trimRight(line);
    if (line.find("FC_INIT_FAILED") != std::string::npos ||
        line.find("Kernel panic") != std::string::npos || line.rfind("fc-guest:", 0) == 0 ||
        line.rfind("FC_", 0) == 0) {
      last = line;
    }
  }
  return last;
}

}  // namespace

bool httpAnswers(int port, int timeout_ms) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool answered = false;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    static constexpr char kRequest[] =
        "GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    if (send(fd, kRequest, sizeof(kRequest) - 1, MSG_NOSIGNAL) > 0) {
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1, timeout_ms) == 1) {
        char buffer[16];
        answered = recv(fd, buffer, sizeof(buffer), 0) > 0;
      }
    }
  }
  close(fd);
  return answered;
}

VmLab::VmLab(sys::CommandRunner& runner, sys::NetnsSysctls& sysctls, VmLabOptions options,
             PortProbe probe)
    : runner_(runner), sysctls_(sysctls), options_(std::move(options)), probe_(std::move(probe)) {
  if (!probe_) probe_ = [](int port) { return httpAnswers(port); };
}

std::string VmLab::fabricFile() const { return fabricFilePath(options_.state_dir, options_.name); }

Status VmLab::ip(const std::vector<std::string>& args) { return runIp(runner_, args, kIpErrors); }

std::vector<std::string> VmLab::ownSwitchNamespaces() {
  auto names = namespacesWithPrefix(runner_, options_.prefix + "-");
  std::vector<std::string> own;
  if (!names.isOk()) return own;
  for (const std::string& name : *names) {
    if (isSwitchNamespace(options_.prefix, name)) own.push_back(name);
  }
  return own;
}

bool VmLab::switchesPresent() {
  // The lab that is there, which need not be the one these options describe.
  std::vector<std::string> wanted;
  if (auto named = namespacesInFabricFile(fabricFile())) {
    for (const std::string& netns : *named) {
      if (!netns.empty()) wanted.push_back(netns);
    }
  } else {
    for (const auto& sw : describeVmLab(options_).switches) wanted.push_back(sw.netns);
  }
  const std::vector<std::string> present = ownSwitchNamespaces();
  return !wanted.empty() && std::all_of(wanted.begin(), wanted.end(), [&](const std::string& n) {
    return std::find(present.begin(), present.end(), n) != present.end();
  });
}

std::string VmLab::routingDir() const { return options_.state_dir + "/lab/" + options_.name; }

LeafSpineSwitches VmLab::leafSpine() {
  return LeafSpineSwitches(runner_, sysctls_, options_.prefix,
                           options_.leaf_spine.value_or(LeafSpineShape{}), routingDir(), kIpErrors);
}

std::vector<pid_t> VmLab::labProcesses() {
  // Every qemu whose -name starts with <prefix>-vm, whatever state dir started it, so that a
  // lost pid file never leaves a VM behind.
  std::vector<pid_t> pids;
  const std::string own = options_.prefix + "-vm";
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string base = entry.path().filename().string();
    if (base.empty() || !std::all_of(base.begin(), base.end(), ::isdigit)) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(base));
    if (pid == getpid()) continue;
    auto args = cmdlineOf(pid);
    if (args.empty() || args[0].find("qemu") == std::string::npos) continue;
    for (size_t i = 0; i + 1 < args.size(); ++i) {
      if (args[i] == "-name" && args[i + 1].rfind(own, 0) == 0 && args[i + 1].size() > own.size() &&
          ::isdigit(args[i + 1][own.size()])) {
        if (alive(pid)) pids.push_back(pid);
        break;
      }
    }
  }
  return pids;
}

core::Result<VmLabStatus> VmLab::status() {
  VmLabStatus st;
  st.fabric_file = fabricFile();
  st.hosts = hostsInFabricFile(st.fabric_file, vmCount(options_));
  st.switch_present = switchesPresent();
  for (int i = 0; i < st.hosts; ++i) {
    // A pid file can outlive its qemu, and the pid be reused: check what runs there.
    const pid_t pid = readPidFile(vmPidFile(options_, i));
    const auto args = alive(pid) ? cmdlineOf(pid) : std::vector<std::string>{};
    const bool running = !args.empty() && args[0].find("qemu") != std::string::npos;
    (running ? st.running_vms : st.missing_vms).push_back(vmName(i));
  }
  st.up = st.switch_present && st.missing_vms.empty() && fs::exists(st.fabric_file);
  return st;
}

// A tree under /tmp (a CI clone) is hidden by the guests' private tmpfs. The guest init script
// runs before any share is mounted, so it is copied next to the kernel; the binary's tree is
// shared read-only at its own path.
Status VmLab::makeVisibleToGuests() {
  // Without a kernel cache there is nothing to boot: checkPrerequisites() says so.
  const bool have_cache = fs::exists(options_.cache_dir + "/vmlinuz");
  if (have_cache && !guestShareRoot(options_.guest_init).empty() &&
      fs::exists(options_.guest_init)) {
    const std::string script = readTextFile(options_.guest_init);
    const std::string copy = options_.cache_dir + "/guest-init-" +
                             std::to_string(std::hash<std::string>{}(script)) + ".sh";
    if (!fs::exists(copy)) {
      const std::string tmp = copy + ".tmp" + std::to_string(getpid());
      {
        std::ofstream out(tmp);
        out << script;
        if (!out) return Status(StatusCode::kInternal, "cannot write " + tmp);
      }
      fs::permissions(tmp, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                               fs::perms::others_read | fs::perms::others_exec);
      std::error_code ec;
      fs::rename(tmp, copy, ec);
      if (ec) return Status(StatusCode::kInternal, "cannot write " + copy + ": " + ec.message());
    }
    options_.guest_init = copy;
  }
  for (const std::string& path : {options_.binary}) {
    const std::string root = guestShareRoot(path);
    if (!root.empty() &&
        std::find(options_.shares.begin(), options_.shares.end(), root) == options_.shares.end()) {
      options_.shares.push_back(root);
    }
  }
  return Status::ok();
}

Status VmLab::checkPrerequisites() {
  if (geteuid() != 0) {
    return Status(StatusCode::kPermissionDenied,
                  "lab up --kind vm needs root for taps, namespaces and qemu's 9p passthrough; run "
                  "it as root (sudo)");
  }
  if (!options_.leaf_spine && (options_.hosts < 2 || options_.hosts > 32)) {
    return Status(StatusCode::kInvalidArgument, "--hosts must be between 2 and 32 for the VM lab");
  }
  if (options_.leaf_spine) {
    FC_RETURN_IF_ERROR(checkLeafSpineShape(*options_.leaf_spine));
    if (options_.leaf_spine->rails != 1) {
      return Status(StatusCode::kInvalidArgument,
                    "--rails must be 1 for the VM lab: a guest has one data NIC");
    }
    if (vmCount(options_) > 32) {
      return Status(StatusCode::kInvalidArgument,
                    "the VM lab boots at most 32 VMs, and this leaf-spine has " +
                        std::to_string(vmCount(options_)) +
                        " hosts ((--leaves / --rails) * --hosts-per-leaf)");
    }
    if (options_.egress && options_.egress->pfc) {
      return Status(StatusCode::kInvalidArgument,
                    "--pfc needs the star in the VM lab: its PFC agent runs on the one switch, "
                    "and pause propagation between leaves and spines is the namespace lab's");
    }
  }
  if (options_.egress) FC_RETURN_IF_ERROR(checkEgressModel(*options_.egress));
  if (options_.egress) FC_RETURN_IF_ERROR(checkEcnMarking(*options_.egress));
  if (!fs::exists("/dev/net/tun")) {
    return Status(
        StatusCode::kNotSupported,
        "there is no /dev/net/tun, so qemu cannot create the VMs' tap NICs (modprobe tun, "
        "or give the container the tun device)");
  }
  auto version = runner_.run({options_.qemu, "--version"}, 15000);
  if (!version.isOk() || version->exit_code != 0) {
    return Status(
        StatusCode::kNotSupported,
        options_.qemu + " is not installed; run deploy/install-deps.sh (qemu-system-x86)");
  }
  const std::string& cache = options_.cache_dir;
  if (!fs::exists(cache + "/vmlinuz") || !fs::exists(cache + "/kernel/lib")) {
    return Status(StatusCode::kFailedPrecondition,
                  "no guest kernel in " + cache + "; run deploy/vm/fetch-kernel.sh " + cache);
  }
  if (!fs::exists(cache + "/initramfs.cpio.gz")) {
    return Status(StatusCode::kFailedPrecondition,
                  "no initramfs in " + cache + "; run deploy/vm/make-initramfs.sh " + cache);
  }
  std::vector<std::pair<std::string, std::string>> paths = {
      {"guest init script", options_.guest_init}};
  if (!options_.agent_command.empty() && !options_.binary.empty()) {
    paths.push_back({"fabric-chaos binary", options_.binary});
  }
  for (const auto& [what, path] : paths) {
    if (path.empty() || path[0] != '/' || !fs::exists(path)) {
      return Status(StatusCode::kFailedPrecondition,
                    "the " + what + " " + (path.empty() ? "(none given)" : path) +
                        " does not exist or is not an absolute path");
    }
    const std::string root = guestShareRoot(path);
    const bool shared =
        std::find(options_.shares.begin(), options_.shares.end(), root) != options_.shares.end();
    if (!root.empty() && !shared) {
      return Status(StatusCode::kFailedPrecondition,
                    "the VMs cannot see the " + what + " " + path + ": their " +
                        hiddenInGuest(path) +
                        " is private; use a copy outside /tmp, /run and "
                        "/var/tmp");
    }
  }
  std::vector<std::string> paths_on_cmdline{cache, options_.state_dir, options_.guest_init};
  paths_on_cmdline.insert(paths_on_cmdline.end(), options_.shares.begin(), options_.shares.end());
  for (const std::string& path : paths_on_cmdline) {
    if (path.find_first_of(", \t\n") != std::string::npos) {
      return Status(StatusCode::kInvalidArgument, "the VM lab cannot use " + path +
                                                      ": qemu options and the kernel command line "
                                                      "do not allow commas or spaces in paths");
    }
  }
  if (options_.agent_command.find('\n') != std::string::npos) {
    return Status(StatusCode::kInvalidArgument, "the agent command must be one line");
  }
  return Status::ok();
}

Status VmLab::writeToken() {
  std::ifstream random("/dev/urandom", std::ios::binary);
  unsigned char bytes[32];
  if (!random.read(reinterpret_cast<char*>(bytes), sizeof(bytes))) {
    return Status(StatusCode::kInternal, "cannot read /dev/urandom for the agent token");
  }
  std::string token;
  static constexpr char kHex[] = "0123456789abcdef";
  for (unsigned char b : bytes) {
    token += kHex[b >> 4];
    token += kHex[b & 15];
  }
  const std::string path = vmTokenFile(options_);
  ::unlink(path.c_str());
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return core::errnoStatus(errno, "cannot create " + path);
  token += "\n";
  const bool ok = ::write(fd, token.data(), token.size()) == static_cast<ssize_t>(token.size());
  ::close(fd);
  if (!ok) return Status(StatusCode::kInternal, "cannot write " + path);
  return Status::ok();
}

Status VmLab::writeFabric(const scenarios::Fabric& fabric) {
  return writeFabricFile(options_.state_dir, options_.name, fabric);
}

Status VmLab::bootVm(int index, const Progress& progress) {
  const std::string name = vmName(index);
  const std::string tap = vmTapName(options_, index);
  const NetnsPort port = vmSwitchPort(options_, index);
  std::error_code ec;
  fs::remove(vmPidFile(options_, index), ec);
  progress(name + ": starting qemu (" + vmDataAddress(options_, index) +
           ", agent port 127.0.0.1:" + std::to_string(options_.base_agent_port + index) + ")");
  auto argv = qemuArgv(options_, index);
  // -daemonize returns once the VM is set up (tap open, pid file written) and keeps it running
  // after `lab up` exits.
  auto result = runner_.run(argv, 60000);
  if (!result.isOk()) return result.status().withContext(name + ": cannot start qemu");
  if (result->exit_code != 0) {
    const std::string err = trimRight(result->err);
    if (err.find("host forwarding rule") != std::string::npos) {
      return Status(StatusCode::kUnavailable,
                    name + ": port 127.0.0.1:" + std::to_string(options_.base_agent_port + index) +
                        " is already in use, so qemu cannot forward the agent there (pick "
                        "another with --base-port)",
                    result->exit_code);
    }
    return Status(StatusCode::kInternal, name + ": qemu failed: " + err, result->exit_code);
  }
  // The tap appears in this (the initial) namespace, where qemu opened it; the open fd keeps
  // working after the move into the switch namespace.
  Status moved;
  for (int attempt = 0; attempt < 50; ++attempt) {
    moved = ip({"link", "set", tap, "netns", port.netns});
    if (moved.isOk()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (!moved.isOk()) return moved.withContext(name + ": cannot move " + tap + " into the switch");
  // On a leaf the tap is the host port p<n> that the routing plan, the flow-hash reset and the
  // fabric description name (it is down after the move, so it can be renamed).
  if (port.ifname != tap) {
    FC_RETURN_IF_ERROR(ip({"-n", port.netns, "link", "set", tap, "name", port.ifname}));
  }
  FC_RETURN_IF_ERROR(ip({"-n", port.netns, "link", "set", port.ifname, "master", "br0"}));
  FC_RETURN_IF_ERROR(ip({"-n", port.netns, "link", "set", port.ifname, "up"}));
  return Status::ok();
}

Status VmLab::waitReady(const Progress& progress) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const int n = vmCount(options_);
  std::vector<bool> ready(static_cast<size_t>(n), false);
  std::vector<bool> agent_ready(static_cast<size_t>(n), options_.agent_command.empty());
  std::vector<double> ready_at(static_cast<size_t>(n), 0);
  int last_report_s = 0;
  while (true) {
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    bool all = true;
    for (int i = 0; i < n; ++i) {
      const auto k = static_cast<size_t>(i);
      if (ready[k] && agent_ready[k]) continue;
      all = false;
      const std::string name = vmName(i);
      const std::string console_path = vmConsoleLog(options_, i);
      const std::string console = readTextFile(console_path);
      if (!ready[k]) {
        if (console.find("FC_GUEST_READY") != std::string::npos) {
          ready[k] = true;
          ready_at[k] = elapsed;
          char line[96];
          std::snprintf(line, sizeof(line), "%s: ready after %.0f s", name.c_str(), elapsed);
          progress(line);
          continue;
        }
        if (console.find("FC_INIT_FAILED") != std::string::npos ||
            console.find("Kernel panic") != std::string::npos ||
            !alive(readPidFile(vmPidFile(options_, i)))) {
          std::string why = lastGuestLine(console);
          return Status(StatusCode::kInternal, name + " stopped while booting" +
                                                   (why.empty() ? "" : " (" + why + ")") +
                                                   "; see " + console_path);
        }
        if (elapsed > options_.boot_timeout_s) {
          return Status(StatusCode::kTimeout, name + " did not boot within " +
                                                  std::to_string(options_.boot_timeout_s) +
                                                  " s; see " + console_path);
        }
        continue;
      }
      // Booted; the agent comes up a moment later (and is restarted by guest-init if it exits).
      const int port = options_.base_agent_port + i;
      if (probe_(port)) {
        agent_ready[k] = true;
        progress(name + ": agent answering on 127.0.0.1:" + std::to_string(port));
        continue;
      }
      if (!alive(readPidFile(vmPidFile(options_, i)))) {
        return Status(StatusCode::kInternal, name + " stopped; see " + console_path);
      }
      if (elapsed - ready_at[k] > options_.agent_timeout_s) {
        std::string why = lastGuestLine(console);
        return Status(StatusCode::kTimeout,
                      name + "'s agent did not answer on 127.0.0.1:" + std::to_string(port) +
                          " within " + std::to_string(options_.agent_timeout_s) + " s" +
                          (why.empty() ? "" : " (last: " + why + ")") + "; see " + console_path);
      }
    }
    if (all) return Status::ok();
    if (static_cast<int>(elapsed) / 5 > last_report_s / 5) {
      last_report_s = static_cast<int>(elapsed);
      for (int i = 0; i < n; ++i) {
        const auto k = static_cast<size_t>(i);
        if (!ready[k]) {
          progress(vmName(i) + ": booting... " + std::to_string(last_report_s) + " s");
        } else if (!agent_ready[k]) {
          progress(vmName(i) + ": waiting for the agent... " + std::to_string(last_report_s) +
                   " s");
        }
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
}

// "2 VMs on switch sw0", "4 VMs on 2 leaves and 2 spines".
std::string VmLab::shapeText() const {
  const std::string vms = std::to_string(vmCount(options_)) + " VMs";
  if (!options_.leaf_spine) return vms + " on switch sw0";
  return vms + " on " + std::to_string(options_.leaf_spine->leaves) + " leaves and " +
         std::to_string(options_.leaf_spine->spines) + " spines";
}

Status VmLab::buildSwitches(const Progress& progress) {
  if (options_.leaf_spine) {
    return leafSpine().build(
        leafSpineBuild(options_.prefix, *options_.leaf_spine, HostCabling::kByCaller), progress);
  }
  const std::string sw = vmSwitchPort(options_, 0).netns;
  progress("creating switch namespace " + sw + " with bridge br0");
  FC_RETURN_IF_ERROR(addSwitchNamespace(runner_, sw, kIpErrors));
  // As in the namespace lab: STP off and forward_delay 0, so a port forwards as soon as it is up.
  return addSwitchBridge(runner_, sw, kIpErrors);
}

Status VmLab::applyEgress(const scenarios::Fabric& fabric, const Progress& progress) {
  if (!options_.egress) return Status::ok();
  // The taps and uplinks are host-kernel ports too: the same model and marker as the namespace
  // lab's.
  auto ports = modelEverySwitchPort(runner_, fabric, *options_.egress, kIpErrors);
  if (!ports.isOk()) return ports.status();
  progress("modelled egress on all " + std::to_string(*ports) +
           " switch ports: " + describeEgress(*options_.egress));
  if (options_.egress->ecn)
    progress("ECN marking on every port: " + describeEcn(*options_.egress->ecn));
  if (options_.egress->pfc) {
    const scenarios::Switch& sw_model = fabric.switches.front();
    FC_RETURN_IF_ERROR(startPfcAgent(runner_, options_.binary, sw_model, options_.state_dir));
    progress(describePfc(*options_.egress, pfcStatsFile(options_.state_dir, sw_model.netns)));
  }
  return Status::ok();
}

core::Result<scenarios::Fabric> VmLab::up(const Progress& progress) {
  FC_RETURN_IF_ERROR(makeVisibleToGuests());
  FC_RETURN_IF_ERROR(checkPrerequisites());
  auto current = status();
  if (!current.isOk()) return current.status();
  const scenarios::Fabric fabric = describeVmLab(options_);
  if (current->up && current->hosts == vmCount(options_) &&
      readFabricFile(fabricFile()) == scenarios::toJson(fabric)) {
    // A leaf-spine whose routing daemons died cannot route around a fault: rebuild it.
    const std::string broken = options_.leaf_spine ? leafSpine().routingProblem() : "";
    if (broken.empty()) {
      progress("lab " + options_.name + " is already up with " + shapeText());
      return fabric;
    }
    progress("its BGP routing is broken (" + broken + "): rebuilding");
  }
  if (current->switch_present || !current->running_vms.empty() || !labProcesses().empty() ||
      !ownSwitchNamespaces().empty() || fs::exists(fabricFile())) {
    progress("removing a partial or different VM lab first");
    FC_RETURN_IF_ERROR(down([](const std::string&) {}));
  }

  std::error_code ec;
  fs::create_directories(vmDir(options_), ec);
  if (ec)
    return Status(StatusCode::kInternal, "cannot create " + vmDir(options_) + ": " + ec.message());

  auto build = [&]() -> Status {
    FC_RETURN_IF_ERROR(buildSwitches(progress));
    FC_RETURN_IF_ERROR(writeToken());
    const int vms = vmCount(options_);
    for (int i = 0; i < vms; ++i) FC_RETURN_IF_ERROR(bootVm(i, progress));
    progress("waiting for " + std::to_string(vms) +
             " VMs to boot (TCG: about 10 s each, longer on a busy machine); consoles in " +
             vmDir(options_));
    FC_RETURN_IF_ERROR(waitReady(progress));
    // The leaves' host ports exist now that the taps are in place.
    if (options_.leaf_spine) FC_RETURN_IF_ERROR(leafSpine().ensureFiveTupleHashing(progress));
    FC_RETURN_IF_ERROR(applyEgress(fabric, progress));
    return writeFabric(fabric);
  };
  if (Status s = build(); !s.isOk()) {
    // Never leave half a lab behind; the console logs stay for the post-mortem.
    (void)down([](const std::string&) {});
    return s;
  }
  progress("lab " + options_.name + " is up: " + shapeText() + " (" + fabricFile() + ")");
  return fabric;
}

Status VmLab::down(const Progress& progress) {
  // Every qemu of this lab: its pid files, and any other qemu named <prefix>-vmN.
  std::vector<pid_t> pids = labProcesses();
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(vmDir(options_), ec)) {
    if (entry.path().extension() != ".pid") continue;
    const pid_t pid = readPidFile(entry.path().string());
    if (!alive(pid) || std::find(pids.begin(), pids.end(), pid) != pids.end()) continue;
    auto args = cmdlineOf(pid);
    if (!args.empty() && args[0].find("qemu") != std::string::npos) pids.push_back(pid);
  }
  if (!pids.empty()) {
    progress("stopping " + std::to_string(pids.size()) + " VM" + (pids.size() == 1 ? "" : "s"));
    for (pid_t pid : pids) ::kill(pid, SIGTERM);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    auto anyAlive = [&] {
      return std::any_of(pids.begin(), pids.end(), [](pid_t p) { return alive(p); });
    };
    while (anyAlive() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (anyAlive()) {
      progress("some VMs ignored SIGTERM; sending SIGKILL");
      for (pid_t pid : pids) {
        if (alive(pid)) ::kill(pid, SIGKILL);
      }
      const auto kill_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
      while (anyAlive() && std::chrono::steady_clock::now() < kill_deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
  }
  sys::releasePooledNetnsSockets();  // or the namespaces would outlive their deletion
  Status first_error;
  const std::string own_taps = options_.prefix + "-tap";
  for (const std::string& sw : ownSwitchNamespaces()) {
    // A tap that outlived its qemu keeps its clsact qdisc (ECN marker, flow-hash reset): remove
    // them first.
    if (auto links = runner_.run({"ip", "-n", sw, "-o", "link", "show"}); links.isOk()) {
      static const std::regex kLeafHostPort("p[0-9]+");
      for (const auto& port : linksIn(links->out, [&](const std::string& name) {
             return name.rfind(own_taps, 0) == 0 || std::regex_match(name, kLeafHostPort);
           })) {
        (void)runner_.run({"tc", "-n", sw, "qdisc", "del", "dev", port, "clsact"});
      }
    }
    // The PFC agent or the BGP daemon runs inside the switch's namespace and would keep it alive.
    if (Status s = stopProcessesInNetns(runner_, sw, progress); !s.isOk() && first_error.isOk()) {
      first_error = s;
    }
    progress("removing namespace " + sw);
    // Deleting the namespace destroys the bridge, the uplinks and any tap still in it.
    if (Status s = ip({"netns", "del", sw}); !s.isOk() && first_error.isOk()) first_error = s;
  }
  // A tap is destroyed with its qemu; one whose qemu was killed before the move is removed here.
  if (auto links = runner_.run({"ip", "-o", "link", "show"}); links.isOk()) {
    for (const auto& tap : linksIn(
             links->out, [&](const std::string& name) { return name.rfind(own_taps, 0) == 0; })) {
      (void)ip({"link", "del", tap});
    }
  }
  for (const auto& entry : fs::directory_iterator(vmDir(options_), ec)) {
    if (entry.path().extension() == ".pid") fs::remove(entry.path(), ec);
  }
  fs::remove(vmTokenFile(options_), ec);
  fs::remove(fabricFile(), ec);
  fs::remove_all(routingDir(), ec);
  if (!labProcesses().empty() && first_error.isOk()) {
    first_error = Status(StatusCode::kInternal, "some qemu processes of the lab did not exit");
  }
  if (first_error.isOk()) {
    progress("lab " + options_.name + " is down (console logs kept in " + vmDir(options_) + ")");
  }
  return first_error;
}

}  // namespace fabric_chaos::lab
