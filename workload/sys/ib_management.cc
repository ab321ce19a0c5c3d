#include "workload/sys/ib_management.h"

#include <infiniband/mad.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace fabric_chaos::workload {
namespace {

using core::Status;
using core::StatusCode;

class LibIbmadManagement : public IbManagement {
 public:
  LibIbmadManagement(ibmad_port* port, int timeout_ms) : port_(port), timeout_ms_(timeout_ms) {}
  ~LibIbmadManagement() override { mad_rpc_close_port(port_); }

  core::Result<LocalIbPort> localPort() override {
    ib_portid_t self;
    std::memset(&self, 0, sizeof(self));
    int port_number = 0;
    ibmad_gid_t gid;
    std::memset(gid, 0, sizeof(gid));
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
  ibmad_port* port_;
  int timeout_ms_;
};

}  // namespace

core::Result<std::unique_ptr<IbManagement>> openIbManagement(const std::string& ca, int port,
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
  return std::unique_ptr<IbManagement>(new LibIbmadManagement(handle, timeout_ms));
}

}  // namespace fabric_chaos::workload
