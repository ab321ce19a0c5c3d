#include "workload/sys/ib_management.h"

#include <fcntl.h>
#include <infiniband/mad.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace fabric_chaos::workload {
namespace {

using core::Status;
using core::StatusCode;

// libibmad prints "ibwarn: ... _do_madrpc failed" to stderr for every unanswered MAD, whatever
// madrpc_show_errors says. An unanswered MAD is what the probe measures, reported as its own
// event; hundreds of those lines a second during an outage would bury the rank's log. The probe
// makes its MADs from one thread, so fd 2 is pointed at /dev/null for the length of each call.
class QuietStderr {
 public:
  QuietStderr() {
    saved_ = dup(STDERR_FILENO);
    const int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (saved_ >= 0 && null >= 0) dup2(null, STDERR_FILENO);
    if (null >= 0) close(null);
  }
  ~QuietStderr() {
    if (saved_ < 0) return;
    dup2(saved_, STDERR_FILENO);
    close(saved_);
  }
  QuietStderr(const QuietStderr&) = delete;
  QuietStderr& operator=(const QuietStderr&) = delete;

 private:
  int saved_ = -1;
};

ib_portid_t directed(const DirectRoute& route) {
  ib_portid_t id;
  std::memset(&id, 0, sizeof(id));
  id.drpath.cnt = static_cast<int>(route.size());
  for (size_t i = 0; i < route.size() && i + 1 < IB_SUBNET_PATH_HOPS_MAX; ++i) {
    id.drpath.p[i + 1] = static_cast<uint8_t>(route[i]);
  }
  id.drpath.drslid = 0xffff;
  id.drpath.drdlid = 0xffff;
  return id;
}

std::string describeRoute(const DirectRoute& route) {
  std::string text = "0";
  for (int port : route) text += "," + std::to_string(port);
  return text;
}

class LibIbmadPort : public IbPort {
 public:
  LibIbmadPort(ibmad_port* port, int timeout_ms) : port_(port), timeout_ms_(timeout_ms) {}
  ~LibIbmadPort() override { mad_rpc_close_port(port_); }

  core::Result<SmpNodeInfo> nodeInfo(const DirectRoute& route, int timeout_ms) override {
    uint8_t info[IB_SMP_DATA_SIZE];
    FC_RETURN_IF_ERROR(query(route, IB_ATTR_NODE_INFO, 0, timeout_ms, info, "NodeInfo"));
    SmpNodeInfo out;
    out.is_switch = mad_get_field(info, 0, IB_NODE_TYPE_F) == IB_NODE_SWITCH;
    out.ports = static_cast<int>(mad_get_field(info, 0, IB_NODE_NPORTS_F));
    out.node_guid = mad_get_field64(info, 0, IB_NODE_GUID_F);
    out.port_guid = mad_get_field64(info, 0, IB_NODE_PORT_GUID_F);
    out.local_port = static_cast<int>(mad_get_field(info, 0, IB_NODE_LOCAL_PORT_F));
    return out;
  }

  core::Result<std::string> nodeDescription(const DirectRoute& route, int timeout_ms) override {
    uint8_t info[IB_SMP_DATA_SIZE];
    FC_RETURN_IF_ERROR(query(route, IB_ATTR_NODE_DESC, 0, timeout_ms, info, "NodeDescription"));
    // 64 bytes, NUL-padded when shorter.
    const char* text = reinterpret_cast<const char*>(info);
    return std::string(text, strnlen(text, IB_SMP_DATA_SIZE));
  }

  core::Result<SmpPortInfo> portInfo(const DirectRoute& route, int port, int timeout_ms) override {
    uint8_t info[IB_SMP_DATA_SIZE];
    FC_RETURN_IF_ERROR(query(route, IB_ATTR_PORT_INFO, port, timeout_ms, info, "PortInfo"));
    SmpPortInfo out;
    out.lid = static_cast<uint16_t>(mad_get_field(info, 0, IB_PORT_LID_F));
    const uint32_t state = mad_get_field(info, 0, IB_PORT_STATE_F);
    out.state = state <= 4 ? static_cast<IbPortState>(state) : IbPortState::kDown;
    const uint32_t physical = mad_get_field(info, 0, IB_PORT_PHYS_STATE_F);
    out.physical =
        physical <= 7 ? static_cast<IbPhysicalState>(physical) : IbPhysicalState::kNoChange;
    return out;
  }

  core::Status setPhysicalState(const DirectRoute& route, int port, IbPhysicalState state,
                                int timeout_ms) override {
    uint8_t info[IB_SMP_DATA_SIZE];
    FC_RETURN_IF_ERROR(query(route, IB_ATTR_PORT_INFO, port, timeout_ms, info, "PortInfo"));
    // Everything settable says "no change" but the physical state. A switch's external port
    // reports LID 0, which a Set must not carry: any valid unicast LID, ignored there.
    mad_set_field(info, 0, IB_PORT_STATE_F, 0);
    mad_set_field(info, 0, IB_PORT_PHYS_STATE_F, static_cast<uint32_t>(state));
    mad_set_field(info, 0, IB_PORT_LINK_SPEED_ENABLED_F, 0);
    mad_set_field(info, 0, IB_PORT_LINK_WIDTH_ENABLED_F, 0);
    mad_set_field(info, 0, IB_PORT_LINK_SPEED_EXT_ENABLED_F, 0);
    for (MAD_FIELDS field : {IB_PORT_LID_F, IB_PORT_SMLID_F}) {
      const uint32_t lid = mad_get_field(info, 0, field);
      if (lid == 0 || lid == 0xffff) mad_set_field(info, 0, field, 0x1234);
    }
    ib_portid_t id = directed(route);
    QuietStderr quiet;
    if (smp_set_via(info, &id, IB_ATTR_PORT_INFO, static_cast<unsigned>(port),
                    static_cast<unsigned>(timeout_ms), port_) == nullptr) {
      return Status(StatusCode::kTimeout,
                    "no answer to a PortInfo Set by direct route " + describeRoute(route));
    }
    return Status::ok();
  }

  core::Result<LftBlock> lftBlock(const DirectRoute& route, int block, int timeout_ms) override {
    uint8_t info[IB_SMP_DATA_SIZE];
    FC_RETURN_IF_ERROR(
        query(route, IB_ATTR_LINEARFORWTBL, block, timeout_ms, info, "LinearForwardingTable"));
    LftBlock out;
    std::memcpy(out.data(), info, out.size());
    return out;
  }

  core::Result<LocalIbPort> localPort() override {
    ib_portid_t self;
    std::memset(&self, 0, sizeof(self));
    int port_number = 0;
    ibmad_gid_t gid;
    std::memset(gid, 0, sizeof(gid));
    QuietStderr quiet;
    if (ib_resolve_self_via(&self, &port_number, &gid, port_) < 0) {
      return Status(StatusCode::kTimeout, "no PortInfo from the local port");
    }
    // PortInfo by direct route to ourselves: the LID and the master SM's LID as set by the SM.
    ib_portid_t local;
    std::memset(&local, 0, sizeof(local));
    uint8_t info[IB_SMP_DATA_SIZE];
    std::memset(info, 0, sizeof(info));
    if (smp_query_via(info, &local, IB_ATTR_PORT_INFO, 0, timeout_ms_, port_) == nullptr) {
      return Status(StatusCode::kTimeout, "no PortInfo from the local port");
    }
    LocalIbPort out;
    out.lid = static_cast<uint16_t>(mad_get_field(info, 0, IB_PORT_LID_F));
    out.sm_lid = static_cast<uint16_t>(mad_get_field(info, 0, IB_PORT_SMLID_F));
    uint64_t guid = 0;
    for (int i = 8; i < 16; ++i) guid = (guid << 8) | gid[i];
    out.port_guid = guid;
    return out;
  }

  core::Result<ib::SmInfoReply> smInfo(uint16_t lid) override {
    if (lid == 0) return Status(StatusCode::kUnavailable, "no master SM LID to ask");
    ib_portid_t sm;
    std::memset(&sm, 0, sizeof(sm));
    sm.lid = lid;
    uint8_t info[IB_SMP_DATA_SIZE];
    std::memset(info, 0, sizeof(info));
    QuietStderr quiet;
    if (smp_query_via(info, &sm, IB_ATTR_SMINFO, 0, timeout_ms_, port_) == nullptr) {
      return Status(StatusCode::kTimeout, "no SMInfo answer from LID " + std::to_string(lid));
    }
    ib::SmInfoReply reply;
    reply.lid = lid;
    reply.guid = mad_get_field64(info, 0, IB_SMINFO_GUID_F);
    reply.activity = mad_get_field(info, 0, IB_SMINFO_ACT_F);
    reply.priority = static_cast<int>(mad_get_field(info, 0, IB_SMINFO_PRIO_F));
    const uint32_t state = mad_get_field(info, 0, IB_SMINFO_STATE_F);
    reply.state = state <= 3 ? static_cast<ib::SmState>(state) : ib::SmState::kNotActive;
    return reply;
  }

  core::Result<uint16_t> pathRecord(uint16_t sa_lid, uint64_t dest_port_guid) override {
    if (sa_lid == 0) return Status(StatusCode::kUnavailable, "no SA LID to ask");
    ib_portid_t self;
    std::memset(&self, 0, sizeof(self));
    int port_number = 0;
    ibmad_gid_t source;
    std::memset(source, 0, sizeof(source));
    QuietStderr quiet;
    if (ib_resolve_self_via(&self, &port_number, &source, port_) < 0) {
      return Status(StatusCode::kTimeout, "no PortInfo from the local port");
    }
    ibmad_gid_t destination;
    std::memcpy(destination, source, 8);  // the subnet prefix is ours
    for (int i = 0; i < 8; ++i) {
      destination[8 + i] = static_cast<uint8_t>(dest_port_guid >> (8 * (7 - i)));
    }
    ib_portid_t sa;
    std::memset(&sa, 0, sizeof(sa));
    sa.lid = sa_lid;
    uint8_t record[IB_SA_DATA_SIZE];
    std::memset(record, 0, sizeof(record));
    const int dlid = ib_path_query_via(port_, source, destination, &sa, record);
    if (dlid <= 0) {
      return Status(StatusCode::kTimeout,
                    "no PathRecord answer from the SA at LID " + std::to_string(sa_lid));
    }
    return static_cast<uint16_t>(dlid);
  }

 private:
  Status query(const DirectRoute& route, unsigned attribute, unsigned modifier, int timeout_ms,
               uint8_t* out, const char* what) {
    ib_portid_t id = directed(route);
    std::memset(out, 0, IB_SMP_DATA_SIZE);
    QuietStderr quiet;
    if (smp_query_via(out, &id, attribute, modifier, timeout_ms, port_) == nullptr) {
      return Status(StatusCode::kTimeout,
                    std::string("no ") + what + " answer by direct route " + describeRoute(route));
    }
    return Status::ok();
  }

  ibmad_port* port_;
  int timeout_ms_;
};

}  // namespace

core::Result<std::unique_ptr<IbPort>> openIbManagement(const std::string& ca, int port,
                                                       int timeout_ms, int retries) {
  int classes[] = {IB_SMI_CLASS, IB_SMI_DIRECT_CLASS, IB_SA_CLASS};
  std::vector<char> name(ca.begin(), ca.end());
  name.push_back('\0');
  ibmad_port* handle = mad_rpc_open_port(ca.empty() ? nullptr : name.data(), port, classes, 3);
  if (handle == nullptr) {
    return Status(StatusCode::kUnavailable,
                  "cannot open UMAD port " + std::to_string(port) + " of " +
                      (ca.empty() ? std::string("the first CA") : ca) +
                      " (no InfiniBand stack here, or no simulator for umad2sim)",
                  errno);
  }
  // A MAD without an answer is what the probe measures, not a warning for its log.
  madrpc_show_errors(0);
  mad_rpc_set_timeout(handle, timeout_ms);
  mad_rpc_set_retries(handle, retries);
  return std::unique_ptr<IbPort>(new LibIbmadPort(handle, timeout_ms));
}

}  // namespace fabric_chaos::workload
