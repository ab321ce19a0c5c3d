#include "workload/sys/verbs_cm.h"

#include <fcntl.h>
#include <infiniband/verbs.h>

#include <cerrno>
#include <cstring>

#include "workload/sys/endpoint.h"

namespace fabric_chaos::workload::verbs {
namespace {

constexpr char kNoDeviceHint[] =
    " (load an RDMA provider and add a link, e.g. `modprobe rdma_rxe && rdma link add rxe0 type "
    "rxe netdev eth0`)";

}  // namespace

core::Status checkRdmaDevicePresent() {
  errno = 0;
  int count = 0;
  ibv_device** devices = ibv_get_device_list(&count);
  if (devices == nullptr) {
    const int err = errno != 0 ? errno : ENODEV;
    return core::Status(
        core::StatusCode::kNotFound,
        std::string("no RDMA device: ibv_get_device_list: ") + std::strerror(err) + kNoDeviceHint,
        err);
  }
  ibv_free_device_list(devices);
  if (count == 0) {
    return core::Status(
        core::StatusCode::kNotFound,
        std::string("no RDMA device: ibv_get_device_list found none") + kNoDeviceHint, ENODEV);
  }
  return core::Status::ok();
}

core::Result<rdma_event_channel*> createEventChannel() {
  rdma_event_channel* channel = rdma_create_event_channel();
  if (channel == nullptr) {
    const int err = errno;
    if (err == ENODEV || err == ENOENT) {
      return core::Status(core::StatusCode::kNotFound,
                          std::string("no RDMA device: rdma_create_event_channel: ") +
                              std::strerror(err) + kNoDeviceHint,
                          err);
    }
    return core::errnoStatus(err, "rdma_create_event_channel");
  }
  if (!setNonBlocking(channel->fd)) {
    const int err = errno;
    rdma_destroy_event_channel(channel);
    return core::errnoStatus(err, "fcntl rdma_cm channel");
  }
  return channel;
}

core::Result<rdma_cm_id*> listenOn(rdma_event_channel* channel, const std::string& addr, int port,
                                   int backlog) {
  auto local = resolveNumeric(addr, port);
  if (!local.isOk()) return local.status();
  const std::string where = hostPort(addr, port);
  rdma_cm_id* id = nullptr;
  if (rdma_create_id(channel, &id, nullptr, RDMA_PS_TCP) != 0) {
    return core::errnoStatus(errno, "rdma_create_id");
  }
  if (rdma_bind_addr(id, reinterpret_cast<sockaddr*>(&local->addr)) != 0) {
    const int err = errno;
    rdma_destroy_id(id);
    if (err == ENODEV || err == EADDRNOTAVAIL) {
      return core::Status(core::StatusCode::kNotFound,
                          "no RDMA device: no RDMA device carries " + addr + " (rdma_bind_addr " +
                              where + ": " + std::strerror(err) + ")" + kNoDeviceHint,
                          err);
    }
    return core::errnoStatus(err, "rdma_bind_addr " + where);
  }
  if (rdma_listen(id, backlog) != 0) {
    const int err = errno;
    rdma_destroy_id(id);
    return core::errnoStatus(err, "rdma_listen " + where);
  }
  return id;
}

bool setNonBlocking(int fd) {
  const int flags = ::fcntl(fd, F_GETFL);
  return flags >= 0 && ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0;
}

int nextCmEvent(rdma_event_channel* channel, CmEvent* out) {
  rdma_cm_event* event = nullptr;
  if (rdma_get_cm_event(channel, &event) != 0) {
    const int err = errno;
    return (err == EAGAIN || err == EWOULDBLOCK) ? 0 : -err;
  }
  out->type = event->event;
  out->id = event->id;
  out->listen_id = event->listen_id;
  out->status = event->status;
  out->private_data.clear();
  if (event->event != RDMA_CM_EVENT_DISCONNECTED && event->param.conn.private_data != nullptr) {
    const auto* p = static_cast<const uint8_t*>(event->param.conn.private_data);
    out->private_data.assign(p, p + event->param.conn.private_data_len);
  }
  rdma_ack_cm_event(event);
  return 1;
}

std::string cmEventText(const CmEvent& e) {
  std::string text = rdma_event_str(e.type);
  if (e.status != 0) {
    text += " (status " + std::to_string(e.status);
    if (e.status < 0) text += std::string(": ") + std::strerror(-e.status);
    text += ")";
  }
  return text;
}

}  // namespace fabric_chaos::workload::verbs
