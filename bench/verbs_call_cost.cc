// The cost of one data-path verb, measured in a tight loop on a real device: ibv_poll_cq on an
// empty CQ of rxe0 (a read of the provider's queue in user space, no system call), N times.
// verbs_shim_bench runs it with and without the verbs fault library preloaded: the difference is
// what the library's unarmed wrapper adds to every post and poll, which is what it adds to a
// ping-pong's latency (one post and one successful poll on the critical path). Prints
// "ns_per_call <value> shim <0|1>" (shim: whether libfabric-chaos-verbs is mapped in this
// process). Usage: verbs_call_cost [calls], default 2000000.

#include <infiniband/verbs.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

int main(int argc, char** argv) {
  const long calls = argc > 1 ? std::atol(argv[1]) : 2000000;
  int count = 0;
  ibv_device** devices = ibv_get_device_list(&count);
  if (devices == nullptr || count == 0) {
    std::fprintf(stderr, "no RDMA device\n");
    return 1;
  }
  ibv_context* context = ibv_open_device(devices[0]);
  ibv_cq* cq = context != nullptr ? ibv_create_cq(context, 16, nullptr, nullptr, 0) : nullptr;
  if (cq == nullptr) {
    std::fprintf(stderr, "cannot open %s or create a CQ\n", ibv_get_device_name(devices[0]));
    return 1;
  }
  ibv_wc wc[4];
  long found = 0;
  const auto start = std::chrono::steady_clock::now();
  for (long i = 0; i < calls; ++i) found += ibv_poll_cq(cq, 4, wc);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  std::ifstream maps("/proc/self/maps");
  const std::string text((std::istreambuf_iterator<char>(maps)), std::istreambuf_iterator<char>());
  std::printf("ns_per_call %.2f shim %d found %ld\n",
              std::chrono::duration<double, std::nano>(elapsed).count() / calls,
              text.find("libfabric-chaos-verbs") != std::string::npos ? 1 : 0, found);
  ibv_destroy_cq(cq);
  ibv_close_device(context);
  ibv_free_device_list(devices);
  return 0;
}
