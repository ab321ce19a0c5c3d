// The LD_PRELOAD form: the real function is the next definition after this library's, libibverbs'
// default version of it.

#include <dlfcn.h>

#include "verbs_shim/preload/real_verbs.h"

namespace fabric_chaos::verbs_shim {

void* realVerbsSymbol(const char* name, const char* /*version*/) { return dlsym(RTLD_NEXT, name); }

}  // namespace fabric_chaos::verbs_shim
