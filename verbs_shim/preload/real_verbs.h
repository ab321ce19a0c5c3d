#pragma once
// Where the verbs fault library's entry points (verbs_shim/preload/entry_points.cc) find the real
// libibverbs function they stand in front of. Each form of the library links one implementation:
// the LD_PRELOAD form the next definition in the lookup order (real_next.cc), the forwarding form
// the function of that version in the real library it opened (verbs_shim/forward/
// real_forward.cc). nullptr when there is none.

namespace fabric_chaos::verbs_shim {

void* realVerbsSymbol(const char* name, const char* version);

}  // namespace fabric_chaos::verbs_shim
