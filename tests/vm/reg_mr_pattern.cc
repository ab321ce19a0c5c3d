// Registers memory COUNT times on the first RDMA device through libibverbs as a program linked to
// it does (ibv_reg_mr by the dynamic linker, so an LD_PRELOADed library meets it), and prints one
// line: "pattern ynyn" (y: registered, n: refused), then "errno E" of the first refusal.
// Inside libibverbs, ibv_reg_mr calls ibv_reg_mr_iova2 through its PLT, which the preloaded verbs
// fault library defines too: the pattern shows whether one registration counts as one event.
// Usage: reg_mr_pattern COUNT. Exit 0 when it got as far as the registrations, 1 otherwise.

#include <infiniband/verbs.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  const int count = argc == 2 ? std::atoi(argv[1]) : 0;
  if (count <= 0) {
    std::fprintf(stderr, "usage: %s COUNT\n", argv[0]);
    return 2;
  }
  int devices = 0;
  ibv_device** list = ibv_get_device_list(&devices);
  if (list == nullptr || devices == 0) {
    std::fprintf(stderr, "no RDMA device\n");
    return 1;
  }
  ibv_context* context = ibv_open_device(list[0]);
  ibv_pd* pd = context != nullptr ? ibv_alloc_pd(context) : nullptr;
  if (pd == nullptr) {
    std::fprintf(stderr, "cannot open %s or allocate a PD\n", ibv_get_device_name(list[0]));
    return 1;
  }
  std::vector<char> buffer(1 << 16);
  std::string pattern;
  int first_errno = 0;
  // An int, not the enumerator: verbs.h's ibv_reg_mr macro ORs it with another enum type, which
  // C++20 deprecates (clang's -Wdeprecated-enum-enum-conversion).
  constexpr int kAccess = IBV_ACCESS_LOCAL_WRITE;
  for (int i = 0; i < count; ++i) {
    errno = 0;
    ibv_mr* mr = ibv_reg_mr(pd, buffer.data(), buffer.size(), kAccess);
    pattern += mr != nullptr ? 'y' : 'n';
    if (mr == nullptr && first_errno == 0) first_errno = errno;
    if (mr != nullptr) ibv_dereg_mr(mr);
  }
  std::printf("pattern %s\nerrno %d\n", pattern.c_str(), first_errno);
  ibv_dealloc_pd(pd);
  ibv_close_device(context);
  ibv_free_device_list(list);
  return 0;
}
