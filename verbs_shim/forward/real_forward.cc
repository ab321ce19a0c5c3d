// The forwarding form (libfabric-chaos-ibverbs.so, for NCCL_IBVERBS_LIB): the real functions are
// the real libibverbs', by name and version. The library names the real one as a dependency, so
// it is loaded before this one; its handle is taken at load, before any constructor of ours that
// may call it, and every forwarding stub's slot (the generated fc_forward_table) is filled then.
// A function the real library lacks leaves its stub's slot empty and says so, once, at load:
// the table is read off the library this one was built against.

#include <dlfcn.h>

#include <cstdio>

#include "verbs_shim/preload/real_verbs.h"

extern "C" {
// verbs_shim/forward/gen_forwarders.sh's table: {name, version, slot} ..., {0, 0, 0}.
struct ForwardEntry {
  const char* name;
  const char* version;
  void** slot;
};
extern const ForwardEntry fc_forward_table[];
}

namespace fabric_chaos::verbs_shim {
namespace {

void* realLibrary() {
  static void* const handle = [] {
    void* h = dlopen(FC_REAL_LIBIBVERBS, RTLD_NOW | RTLD_NOLOAD);
    if (h == nullptr) h = dlopen(FC_REAL_LIBIBVERBS, RTLD_NOW);
    if (h == nullptr) h = dlopen("libibverbs.so.1", RTLD_NOW);
    if (h == nullptr) {
      std::fprintf(stderr, "fabric-chaos verbs shim: cannot open the real libibverbs: %s\n",
                   dlerror());
    }
    return h;
  }();
  return handle;
}

// Before the entry points' constructor (default priority), which may already reach libibverbs.
__attribute__((constructor(101))) void fillForwardingSlots() {
  void* real = realLibrary();
  if (real == nullptr) return;
  for (const ForwardEntry* e = fc_forward_table; e->name != nullptr; ++e) {
    *e->slot = dlvsym(real, e->name, e->version);
    if (*e->slot == nullptr) {
      std::fprintf(stderr, "fabric-chaos verbs shim: the real libibverbs has no %s@%s\n", e->name,
                   e->version);
    }
  }
}

}  // namespace

void* realVerbsSymbol(const char* name, const char* version) {
  void* real = realLibrary();
  return real == nullptr ? nullptr : dlvsym(real, name, version);
}

}  // namespace fabric_chaos::verbs_shim
