// A verbs program that only listens: it opens one RDMA device and prints each asynchronous event
// the kernel sends it, one line each ("EVENT IBV_EVENT_PORT_ERR port=1"), flushed at once, so that
// rdma_device_guest_test can see, from outside the injector, what a verbs program sees when a
// device fault lands. It acknowledges every event, and exits 0 after IBV_EVENT_DEVICE_FATAL (the
// context is dead then). "READY <device>" says the context is open and listening.
//
//   rdma_async_listener DEVICE [SECONDS]
//
// Exits 1 when the device cannot be opened, 2 when SECONDS (default 600) pass without a
// DEVICE_FATAL.

#include <infiniband/verbs.h>
#include <poll.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

// The event's name as libibverbs' enum spells it: what the guest test matches.
const char* eventName(ibv_event_type type) {
  switch (type) {
    case IBV_EVENT_CQ_ERR:
      return "IBV_EVENT_CQ_ERR";
    case IBV_EVENT_QP_FATAL:
      return "IBV_EVENT_QP_FATAL";
    case IBV_EVENT_QP_REQ_ERR:
      return "IBV_EVENT_QP_REQ_ERR";
    case IBV_EVENT_QP_ACCESS_ERR:
      return "IBV_EVENT_QP_ACCESS_ERR";
    case IBV_EVENT_COMM_EST:
      return "IBV_EVENT_COMM_EST";
    case IBV_EVENT_SQ_DRAINED:
      return "IBV_EVENT_SQ_DRAINED";
    case IBV_EVENT_PATH_MIG:
      return "IBV_EVENT_PATH_MIG";
    case IBV_EVENT_PATH_MIG_ERR:
      return "IBV_EVENT_PATH_MIG_ERR";
    case IBV_EVENT_DEVICE_FATAL:
      return "IBV_EVENT_DEVICE_FATAL";
    case IBV_EVENT_PORT_ACTIVE:
      return "IBV_EVENT_PORT_ACTIVE";
    case IBV_EVENT_PORT_ERR:
      return "IBV_EVENT_PORT_ERR";
    case IBV_EVENT_LID_CHANGE:
      return "IBV_EVENT_LID_CHANGE";
    case IBV_EVENT_PKEY_CHANGE:
      return "IBV_EVENT_PKEY_CHANGE";
    case IBV_EVENT_SM_CHANGE:
      return "IBV_EVENT_SM_CHANGE";
    case IBV_EVENT_SRQ_ERR:
      return "IBV_EVENT_SRQ_ERR";
    case IBV_EVENT_SRQ_LIMIT_REACHED:
      return "IBV_EVENT_SRQ_LIMIT_REACHED";
    case IBV_EVENT_QP_LAST_WQE_REACHED:
      return "IBV_EVENT_QP_LAST_WQE_REACHED";
    case IBV_EVENT_CLIENT_REREGISTER:
      return "IBV_EVENT_CLIENT_REREGISTER";
    case IBV_EVENT_GID_CHANGE:
      return "IBV_EVENT_GID_CHANGE";
    case IBV_EVENT_WQ_FATAL:
      return "IBV_EVENT_WQ_FATAL";
  }
  return "IBV_EVENT_UNKNOWN";
}

// Port events carry a port number; the others name a queue or nothing.
bool isPortEvent(ibv_event_type type) {
  return type == IBV_EVENT_PORT_ACTIVE || type == IBV_EVENT_PORT_ERR ||
         type == IBV_EVENT_LID_CHANGE || type == IBV_EVENT_PKEY_CHANGE ||
         type == IBV_EVENT_SM_CHANGE || type == IBV_EVENT_CLIENT_REREGISTER ||
         type == IBV_EVENT_GID_CHANGE;
}

ibv_context* openDevice(const std::string& name) {
  int count = 0;
  ibv_device** devices = ibv_get_device_list(&count);
  if (devices == nullptr) return nullptr;
  ibv_context* context = nullptr;
  for (int i = 0; i < count && context == nullptr; ++i) {
    if (name == ibv_get_device_name(devices[i])) context = ibv_open_device(devices[i]);
  }
  ibv_free_device_list(devices);
  return context;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: rdma_async_listener DEVICE [SECONDS]\n");
    return 2;
  }
  const std::string device = argv[1];
  const int seconds = argc == 3 ? std::atoi(argv[2]) : 600;
  ibv_context* context = openDevice(device);
  if (context == nullptr) {
    std::fprintf(stderr, "cannot open %s: %s\n", device.c_str(), std::strerror(errno));
    return 1;
  }
  std::printf("READY %s\n", device.c_str());
  std::fflush(stdout);

  // poll() rather than a blocking ibv_get_async_event: the deadline must hold when no event comes.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd fd{context->async_fd, POLLIN, 0};
    const int ready = ::poll(&fd, 1, 200);
    if (ready < 0 && errno != EINTR) {
      std::printf("ERROR poll %s\n", std::strerror(errno));
      std::fflush(stdout);
      return 3;
    }
    if (ready <= 0) continue;
    if ((fd.revents & (POLLERR | POLLHUP)) != 0 && (fd.revents & POLLIN) == 0) {
      std::printf("HANGUP async_fd\n");
      std::fflush(stdout);
      return 3;
    }
    ibv_async_event event{};
    if (ibv_get_async_event(context, &event) != 0) {
      std::printf("ERROR ibv_get_async_event %s\n", std::strerror(errno));
      std::fflush(stdout);
      return 3;
    }
    const ibv_event_type type = event.event_type;
    if (isPortEvent(type)) {
      std::printf("EVENT %s port=%d\n", eventName(type), event.element.port_num);
    } else {
      std::printf("EVENT %s\n", eventName(type));
    }
    std::fflush(stdout);
    ibv_ack_async_event(&event);
    if (type == IBV_EVENT_DEVICE_FATAL) {
      ibv_close_device(context);
      return 0;
    }
  }
  ibv_close_device(context);
  return 2;
}
