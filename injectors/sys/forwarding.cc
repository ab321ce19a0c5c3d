#include "injectors/sys/forwarding.h"

#include <arpa/inet.h>
#include <linux/rtnetlink.h>
#include <netinet/in.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/route/link.h>

#include <map>

#include "injectors/sys/netlink_status.h"
#include "injectors/sys/route_socket_pool.h"

namespace fabric_chaos::sys {
namespace {

using core::Status;
using core::StatusCode;

struct MsgDeleter {
  void operator()(nl_msg* msg) const { nlmsg_free(msg); }
};
using MsgPtr = std::unique_ptr<nl_msg, MsgDeleter>;

core::Result<uint32_t> ipv4(const std::string& field, const std::string& text) {
  in_addr addr{};
  if (::inet_pton(AF_INET, text.c_str(), &addr) != 1) {
    return Status(StatusCode::kInvalidArgument, field + " \"" + text + "\" is not an IPv4 address");
  }
  return addr.s_addr;  // network order, as RTA_SRC/RTA_DST carry it
}

// What one RTM_NEWROUTE answer said: the output interface, or nothing (a blackhole, a local
// route).
struct RouteAnswer {
  int oif = 0;
  bool answered = false;
};

int onRoute(nl_msg* msg, void* arg) {
  auto* answer = static_cast<RouteAnswer*>(arg);
  nlmsghdr* header = nlmsg_hdr(msg);
  if (header->nlmsg_type != RTM_NEWROUTE) return NL_SKIP;
  nlattr* attrs[RTA_MAX + 1] = {};
  if (nlmsg_parse(header, sizeof(rtmsg), attrs, RTA_MAX, nullptr) < 0) return NL_SKIP;
  answer->answered = true;
  if (attrs[RTA_OIF] != nullptr) answer->oif = static_cast<int>(nla_get_u32(attrs[RTA_OIF]));
  return NL_OK;
}

class KernelForwarding : public Forwarding {
 public:
  core::Result<std::vector<std::string>> egressInterfaces(
      const std::string& netns, const ArrivingTcpFlows& flows,
      const std::vector<int>& source_ports) override {
    auto source = ipv4("source", flows.source);
    if (!source.isOk()) return source.status();
    auto destination = ipv4("destination", flows.destination);
    if (!destination.isOk()) return destination.status();
    for (int port : source_ports) {
      if (port < 1 || port > 65535) {
        return Status(StatusCode::kInvalidArgument,
                      "source port " + std::to_string(port) + " is out of 1-65535");
      }
    }
    if (flows.destination_port < 1 || flows.destination_port > 65535) {
      return Status(
          StatusCode::kInvalidArgument,
          "destination port " + std::to_string(flows.destination_port) + " is out of 1-65535");
    }
    std::vector<std::string> out;
    Status status = RouteSocketPool::shared().with(netns, [&](nl_sock* sock) -> Status {
      auto ingress = ifindexOf(sock, netns, flows.ingress);
      if (!ingress.isOk()) return ingress.status();
      std::map<int, std::string> names;
      for (int port : source_ports) {
        auto oif = askOnce(sock, *ingress, *source, *destination, port, flows.destination_port);
        if (!oif.isOk()) return oif.status();
        if (*oif == 0) {
          return Status(StatusCode::kFailedPrecondition,
                        "no route for tcp " + flows.source + ":" + std::to_string(port) + " -> " +
                            flows.destination + ":" + std::to_string(flows.destination_port) +
                            " arriving on " + flows.ingress +
                            (netns.empty() ? std::string() : " in " + netns));
        }
        auto name = names.find(*oif);
        if (name == names.end()) {
          auto resolved = nameOf(sock, *oif);
          if (!resolved.isOk()) return resolved.status();
          name = names.emplace(*oif, *resolved).first;
        }
        out.push_back(name->second);
      }
      return Status::ok();
    });
    if (!status.isOk()) return status;
    return out;
  }

 private:
  // One RTM_GETROUTE round trip; 0 when the answer names no output interface.
  static core::Result<int> askOnce(nl_sock* sock, int ingress, uint32_t source,
                                   uint32_t destination, int source_port, int destination_port) {
    MsgPtr msg(nlmsg_alloc_simple(RTM_GETROUTE, NLM_F_REQUEST));
    if (!msg) return Status(StatusCode::kInternal, "out of memory for a route request");
    rtmsg request{};
    request.rtm_family = AF_INET;
    request.rtm_dst_len = 32;
    request.rtm_src_len = 32;
    if (nlmsg_append(msg.get(), &request, sizeof(request), NLMSG_ALIGNTO) < 0 ||
        nla_put_u32(msg.get(), RTA_DST, destination) < 0 ||
        nla_put_u32(msg.get(), RTA_SRC, source) < 0 ||
        nla_put_u32(msg.get(), RTA_IIF, static_cast<uint32_t>(ingress)) < 0 ||
        nla_put_u8(msg.get(), RTA_IP_PROTO, IPPROTO_TCP) < 0 ||
        nla_put_u16(msg.get(), RTA_SPORT, htons(static_cast<uint16_t>(source_port))) < 0 ||
        nla_put_u16(msg.get(), RTA_DPORT, htons(static_cast<uint16_t>(destination_port))) < 0) {
      return Status(StatusCode::kInternal, "cannot build a route request");
    }
    if (int err = nl_send_auto(sock, msg.get()); err < 0) {
      return nlStatus(err, "cannot send a route request");
    }
    RouteAnswer answer;
    nl_socket_modify_cb(sock, NL_CB_VALID, NL_CB_CUSTOM, onRoute, &answer);
    const int err = nl_recvmsgs_default(sock);
    // The pooled socket is reused by readers that install their own callbacks.
    nl_socket_modify_cb(sock, NL_CB_VALID, NL_CB_DEFAULT, nullptr, nullptr);
    if (err < 0) {
      // A network or host unreachable answer (no route at all) comes back as an error.
      if (err == -NLE_NOADDR || err == -NLE_NODEV) return 0;
      const StatusCode code = nlStatusCode(err);
      if (code == StatusCode::kNotFound) return 0;
      return nlStatus(err, "route lookup");
    }
    if (!answer.answered) return Status(StatusCode::kInternal, "the kernel sent no route");
    // libnl asked for an ACK too, which comes after the route: read it, so that nothing is left
    // on the pooled socket for its next user.
    if (int ack = nl_wait_for_ack(sock); ack < 0) return nlStatus(ack, "route lookup");
    return answer.oif;
  }

  static core::Result<std::string> nameOf(nl_sock* sock, int ifindex) {
    rtnl_link* link = nullptr;
    if (int err = rtnl_link_get_kernel(sock, ifindex, nullptr, &link); err < 0 || link == nullptr) {
      return nlStatus(err < 0 ? err : -NLE_OBJ_NOTFOUND,
                      "cannot read link " + std::to_string(ifindex));
    }
    const char* name = rtnl_link_get_name(link);
    std::string out = name == nullptr ? std::to_string(ifindex) : name;
    rtnl_link_put(link);
    return out;
  }
};

}  // namespace

std::unique_ptr<Forwarding> makeKernelForwarding() { return std::make_unique<KernelForwarding>(); }

}  // namespace fabric_chaos::sys
