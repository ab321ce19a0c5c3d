// Opens libibverbs the way NCCL does (src/misc/ibvwrap.cc): dlopen a library by path, then every
// function by dlvsym(handle, name, "IBVERBS_1.1"), never by the dynamic linker; then opens the
// first RDMA device, allocates a PD and registers 1 MiB. Prints one JSON line:
//   {"devices": N, "device": "rxe0", "registered": true|false, "errno": E, "same_as_real": bool}
// same_as_real: whether the ibv_open_device it found is the system libibverbs' own (it must not
// be, when the library given is the verbs fault library's forwarding form).
// Usage: nccl_style_open LIBRARY. Exit 0 when it got as far as the registration (whatever it
// returned), 1 otherwise.

#include <dlfcn.h>
#include <infiniband/verbs.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <vector>

#undef ibv_reg_mr

namespace {

template <typename F>
F lookup(void* handle, const char* name) {
  auto f = reinterpret_cast<F>(dlvsym(handle, name, "IBVERBS_1.1"));
  if (f == nullptr) std::fprintf(stderr, "no %s@IBVERBS_1.1 in the library\n", name);
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s LIBRARY\n", argv[0]);
    return 2;
  }
  void* handle = dlopen(argv[1], RTLD_NOW);
  if (handle == nullptr) {
    std::fprintf(stderr, "dlopen %s: %s\n", argv[1], dlerror());
    return 1;
  }
  auto get_list = lookup<decltype(&ibv_get_device_list)>(handle, "ibv_get_device_list");
  auto open = lookup<decltype(&ibv_open_device)>(handle, "ibv_open_device");
  auto alloc_pd = lookup<decltype(&ibv_alloc_pd)>(handle, "ibv_alloc_pd");
  auto reg_mr = lookup<struct ibv_mr* (*)(ibv_pd*, void*, size_t, int)>(handle, "ibv_reg_mr");
  auto dereg_mr = lookup<decltype(&ibv_dereg_mr)>(handle, "ibv_dereg_mr");
  auto get_name = lookup<decltype(&ibv_get_device_name)>(handle, "ibv_get_device_name");
  if (!get_list || !open || !alloc_pd || !reg_mr || !dereg_mr || !get_name) return 1;
  void* system = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_NOLOAD);
  const bool same_as_real = system != nullptr && dlvsym(system, "ibv_open_device", "IBVERBS_1.1") ==
                                                     reinterpret_cast<void*>(open);
  int count = 0;
  ibv_device** devices = get_list(&count);
  if (devices == nullptr || count == 0) {
    std::printf("{\"devices\": 0, \"same_as_real\": %s}\n", same_as_real ? "true" : "false");
    return 1;
  }
  ibv_context* context = open(devices[0]);
  ibv_pd* pd = context != nullptr ? alloc_pd(context) : nullptr;
  if (pd == nullptr) {
    std::fprintf(stderr, "cannot open %s or allocate a PD\n", get_name(devices[0]));
    return 1;
  }
  std::vector<char> buffer(1 << 20);
  errno = 0;
  ibv_mr* mr = reg_mr(pd, buffer.data(), buffer.size(), IBV_ACCESS_LOCAL_WRITE);
  const int error = errno;
  std::printf(
      "{\"devices\": %d, \"device\": \"%s\", \"registered\": %s, \"errno\": %d, "
      "\"same_as_real\": %s}\n",
      count, get_name(devices[0]), mr != nullptr ? "true" : "false", mr != nullptr ? 0 : error,
      same_as_real ? "true" : "false");
  std::fflush(stdout);
  if (mr != nullptr) dereg_mr(mr);
  return 0;
}
