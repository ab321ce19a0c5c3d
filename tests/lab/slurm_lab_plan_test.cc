// The Slurm cluster's plan over the namespace lab's star: the slurm.conf's essential lines, the
// nodes' addresses, the daemons' command lines and namespaces, the fabric's "slurm" section,
// sinfo's answer read, and the input refused with one sentence. Pure.

#include "lab/slurm_lab_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "lab/netns_lab.h"

namespace fabric_chaos::lab {
namespace {

using core::StatusCode;

scenarios::Fabric star(int hosts, const std::string& prefix = "fcl",
                       const std::string& subnet = "10.200.0") {
  LabOptions options;
  options.hosts = hosts;
  options.prefix = prefix;
  options.subnet = subnet;
  return describeLab(options);
}

SlurmLabOptions slurmOptions() {
  SlurmLabOptions options;
  options.state_dir = "/run/fc-test";
  options.hostname = "vm";
  return options;
}

SlurmLabPlan planOrDie(const scenarios::Fabric& fabric, const SlurmLabOptions& options) {
  auto plan = planSlurmLab(fabric, options);
  EXPECT_TRUE(plan.isOk()) << plan.status().toString();
  return plan.isOk() ? *plan : SlurmLabPlan{};
}

bool hasLine(const std::string& text, const std::string& line) {
  return ("\n" + text).find("\n" + line + "\n") != std::string::npos;
}

TEST(SlurmLabPlan, TheConfNamesThisHostAsControllerAtItsLabAddressAndEveryHostAsANode) {
  const SlurmLabPlan plan = planOrDie(star(2), slurmOptions());
  const std::string& conf = plan.conf_text;
  const std::string dir = "/run/fc-test/slurm/netns-lab";
  for (const std::string& line : {
           std::string("ClusterName=fclab"),
           std::string("SlurmctldHost=vm(10.200.0.250)"),
           std::string("AuthType=auth/munge"),
           "AuthInfo=socket=" + dir + "/munge/munge.socket.2",
           std::string("CredType=cred/munge"),
           std::string("SlurmUser=root"),
           std::string("SlurmdUser=root"),
           "StateSaveLocation=" + dir + "/state",
           "SlurmdSpoolDir=" + dir + "/spool/%n",
           "SlurmdPidFile=" + dir + "/spool/slurmd-%n.pid",
           "SlurmctldLogFile=" + dir + "/log/slurmctld.log",
           "SlurmdLogFile=" + dir + "/log/slurmd-%n.log",
           std::string("ProctrackType=proctrack/linuxproc"),
           std::string("TaskPlugin=task/none"),
           std::string("AccountingStorageType=accounting_storage/none"),
           std::string("JobCompType=jobcomp/filetxt"),
           "JobCompLoc=" + dir + "/log/jobcomp.txt",
           std::string("SelectType=select/cons_tres"),
           std::string("ReturnToService=2"),
           std::string("NodeName=h0 NodeAddr=10.200.0.1 CPUs=1 State=UNKNOWN"),
           std::string("NodeName=h1 NodeAddr=10.200.0.2 CPUs=1 State=UNKNOWN"),
           std::string("PartitionName=lab Nodes=h0,h1 Default=YES MaxTime=INFINITE State=UP"),
       }) {
    EXPECT_TRUE(hasLine(conf, line)) << "missing \"" << line << "\" in:\n" << conf;
  }
  EXPECT_EQ(nodesInSlurmConf(conf), (std::vector<std::string>{"h0", "h1"}));
}

TEST(SlurmLabPlan, NodesAreTheFabricHostsAtTheirOwnAddressesInTheirOwnNamespaces) {
  SlurmLabOptions options = slurmOptions();
  options.prefix = "fcs";
  options.subnet = "10.203.0";
  options.name = "slurm-lab";
  const SlurmLabPlan plan = planOrDie(star(3, "fcs", "10.203.0"), options);
  ASSERT_EQ(plan.nodes.size(), 3u);
  EXPECT_EQ(plan.nodes[2].node, "h2");
  EXPECT_EQ(plan.nodes[2].netns, "fcs-h2");
  EXPECT_EQ(plan.nodes[2].address, "10.203.0.3");
  EXPECT_EQ(plan.controller_address, "10.203.0.250");
  EXPECT_EQ(plan.layout.controller_netns, "fcs-slurmctl");
  EXPECT_EQ(plan.layout.dir, "/run/fc-test/slurm/slurm-lab");
  EXPECT_EQ(plan.switch_netns, "fcs-sw0");
  EXPECT_TRUE(hasLine(plan.conf_text, "SlurmctldHost=vm(10.203.0.250)"));
  EXPECT_TRUE(hasLine(plan.conf_text, "NodeName=h2 NodeAddr=10.203.0.3 CPUs=1 State=UNKNOWN"));
  EXPECT_TRUE(hasLine(plan.conf_text,
                      "PartitionName=lab Nodes=h0,h1,h2 Default=YES MaxTime=INFINITE State=UP"));
}

TEST(SlurmLabPlan, TheFabricsSlurmSectionNamesTheConfTheControllerNamespaceAndTheNodes) {
  const SlurmLabPlan plan = planOrDie(star(2), slurmOptions());
  scenarios::SlurmCluster expected;
  expected.conf = "/run/fc-test/slurm/netns-lab/slurm.conf";
  expected.submit_netns = "fcl-slurmctl";
  expected.partition = "lab";
  expected.nodes = {{"h0", "h0"}, {"h1", "h1"}};
  EXPECT_EQ(plan.cluster, expected);
  EXPECT_EQ(scenarios::toJson(plan.cluster),
            nlohmann::json::parse(R"({"conf": "/run/fc-test/slurm/netns-lab/slurm.conf",
                                      "submit_netns": "fcl-slurmctl", "partition": "lab",
                                      "nodes": {"h0": "h0", "h1": "h1"}})"));
  // What the fabric file then carries reads back as the same fabric.
  scenarios::Fabric fabric = star(2);
  fabric.slurm = plan.cluster;
  auto parsed = scenarios::fabricFromJson(scenarios::toJson(fabric));
  ASSERT_TRUE(parsed.isOk()) << parsed.status().toString();
  EXPECT_EQ(parsed->slurm, plan.cluster);
}

TEST(SlurmLabPlan, TheControllerNamespaceIsCabledToANewPortOfTheStarsBridge) {
  const SlurmLabPlan plan = planOrDie(star(2), slurmOptions());
  using Argv = std::vector<std::string>;
  EXPECT_EQ(controllerNamespaceCommands(plan),
            (std::vector<Argv>{
                {"netns", "add", "fcl-slurmctl"},
                {"-n", "fcl-slurmctl", "link", "set", "lo", "up"},
                {"-n", "fcl-slurmctl", "link", "add", "eth0", "type", "veth", "peer", "name",
                 "pctl", "netns", "fcl-sw0"},
                {"-n", "fcl-sw0", "link", "set", "pctl", "master", "br0"},
                {"-n", "fcl-sw0", "link", "set", "pctl", "up"},
                {"-n", "fcl-slurmctl", "addr", "add", "10.200.0.250/24", "dev", "eth0"},
                {"-n", "fcl-slurmctl", "link", "set", "eth0", "up"},
            }));
}

TEST(SlurmLabPlan, DaemonsRunWithTheClustersConfInTheirNamespaces) {
  const SlurmLabPlan plan = planOrDie(star(2), slurmOptions());
  const std::string dir = "/run/fc-test/slurm/netns-lab";
  const sys::DaemonSpec munged = mungedSpec(plan.layout);
  EXPECT_EQ(
      munged.argv,
      (std::vector<std::string>{
          "munged", "--force", "-F", "--socket=" + dir + "/munge/munge.socket.2",
          "--key-file=" + dir + "/munge.key", "--pid-file=" + dir + "/munge/munged.pid",
          "--log-file=" + dir + "/log/munged.log", "--seed-file=" + dir + "/munge/munged.seed"}));
  EXPECT_EQ(munged.netns, "");  // its socket file serves every namespace

  const sys::DaemonSpec ctl = slurmctldSpec(plan.layout);
  EXPECT_EQ(ctl.argv, (std::vector<std::string>{"slurmctld", "-D", "-i"}));
  EXPECT_EQ(ctl.netns, "fcl-slurmctl");
  EXPECT_NE(std::find(ctl.env.begin(), ctl.env.end(), "SLURM_CONF=" + dir + "/slurm.conf"),
            ctl.env.end());

  const sys::DaemonSpec h1 = slurmdSpec(plan.layout, plan.nodes[1]);
  EXPECT_EQ(h1.argv, (std::vector<std::string>{"slurmd", "-D", "-N", "h1"}));
  EXPECT_EQ(h1.netns, "fcl-h1");
  EXPECT_EQ(h1.cwd, dir + "/spool/h1");
  EXPECT_EQ(h1.log_path, dir + "/log/slurmd-h1.out");
  EXPECT_NE(std::find(h1.env.begin(), h1.env.end(), "SLURM_CONF=" + dir + "/slurm.conf"),
            h1.env.end());

  EXPECT_EQ(sinfoNodeStatesArgv(plan.layout),
            (std::vector<std::string>{"nsenter", "--net=/run/netns/fcl-slurmctl", "env",
                                      "SLURM_CONF=" + dir + "/slurm.conf", "sinfo", "-h", "-N",
                                      "-o", "%N %T"}));
}

TEST(SlurmLabPlan, SinfosAnswerSaysWhichNodesAreNotIdleYet) {
  const std::vector<std::string> nodes = {"h0", "h1"};
  const struct {
    const char* sinfo;
    const char* not_idle;
  } cases[] = {
      {"h0 idle\nh1 idle\n", ""},
      {"h1 idle\nh0 idle", ""},
      {"h0 idle\nh1 down*\n", "h1 down*"},
      {"h0 unknown*\nh1 idle*\n", "h0 unknown*, h1 idle*"},
      {"h0 idle\n", "h1 missing"},
      {"", "h0 missing, h1 missing"},
      {"h0 allocated\nh1 mixed\n", "h0 allocated, h1 mixed"},
  };
  for (const auto& c : cases) EXPECT_EQ(nodesNotIdle(c.sinfo, nodes), c.not_idle) << c.sinfo;
}

TEST(SlurmLabPlan, LogTailsAndHostnames) {
  EXPECT_EQ(logTailOneLine("a\nb\n\nc\nd\n", 3), "b | c | d");
  EXPECT_EQ(logTailOneLine("only\n", 3), "only");
  EXPECT_EQ(logTailOneLine("\n\n", 3), "(empty)");
  EXPECT_EQ(shortHostname("vm.example.org"), "vm");
  EXPECT_EQ(shortHostname("node017"), "node017");
}

TEST(SlurmLabPlan, RefusesWhatSlurmOrTheLabWouldNotTakeWithOneSentence) {
  struct Case {
    void (*change)(SlurmLabOptions&, scenarios::Fabric&);
    const char* says;
  };
  const Case cases[] = {
      {[](SlurmLabOptions& o, scenarios::Fabric&) { o.hostname = ""; },
       "cannot tell this machine's hostname"},
      {[](SlurmLabOptions& o, scenarios::Fabric&) { o.hostname = "vm.example.org"; },
       "\"vm.example.org\" is not a short hostname"},
      {[](SlurmLabOptions& o, scenarios::Fabric&) { o.hostname = "-vm"; },
       "is not a short hostname"},
      {[](SlurmLabOptions& o, scenarios::Fabric&) { o.name = "../etc"; }, "the lab's name"},
      {[](SlurmLabOptions& o, scenarios::Fabric&) { o.prefix = "f c"; }, "the lab's prefix"},
      {[](SlurmLabOptions& o, scenarios::Fabric&) { o.subnet = "10.200"; }, "three octets"},
      {[](SlurmLabOptions& o, scenarios::Fabric&) { o.subnet = "10.200.300"; }, "three octets"},
      {[](SlurmLabOptions& o, scenarios::Fabric&) { o.state_dir = "run/fc"; }, "absolute path"},
      {[](SlurmLabOptions& o, scenarios::Fabric&) { o.state_dir = "/tmp/my lab"; },
       "which slurm.conf would not read back"},
      {[](SlurmLabOptions& o, scenarios::Fabric&) { o.state_dir = "/tmp/50%"; },
       "which slurm.conf would not read back"},
      {[](SlurmLabOptions& o, scenarios::Fabric&) { o.state_dir = "/" + std::string(90, 'x'); },
       "more than a unix socket takes (107)"},
      {[](SlurmLabOptions&, scenarios::Fabric& f) {
         LabOptions leaf_spine;
         leaf_spine.topology = LabTopology::kLeafSpine;
         f = describeLab(leaf_spine);
       },
       "needs the star topology"},
      {[](SlurmLabOptions&, scenarios::Fabric& f) { f.hosts[1].name = "h[1]"; },
       "\"h[1]\" cannot be a Slurm node name"},
      {[](SlurmLabOptions&, scenarios::Fabric& f) { f.hosts[1].nics[0].address = "10.9.9.2"; },
       "host h1 needs a namespace and an eth0 address in 10.200.0.0/24"},
      {[](SlurmLabOptions&, scenarios::Fabric& f) { f.hosts[1].nics[0].address = "10.200.0.250"; },
       "host h1 has 10.200.0.250, the Slurm controller's address"},
      {[](SlurmLabOptions&, scenarios::Fabric& f) { f.switches[0].ports.push_back("pctl"); },
       "already has a port pctl"},
  };
  for (const Case& c : cases) {
    SlurmLabOptions options = slurmOptions();
    scenarios::Fabric fabric = star(2);
    c.change(options, fabric);
    auto plan = planSlurmLab(fabric, options);
    ASSERT_FALSE(plan.isOk()) << c.says;
    EXPECT_EQ(plan.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(plan.status().message().find(c.says), std::string::npos) << plan.status().message();
    EXPECT_EQ(plan.status().message().find('\n'), std::string::npos) << plan.status().message();
  }
}

}  // namespace
}  // namespace fabric_chaos::lab
