#pragma once
// Runs a function with the calling code's network operations placed in another network namespace.
// A network namespace is per thread, so the work runs on a short-lived thread that setns()es into
// /run/netns/NAME; sockets opened there stay bound to that namespace after the thread returns.
// Safe from any thread; the caller's own namespace is never changed.

#include <functional>
#include <string>

#include "core/status.h"

namespace fabric_chaos::sys {

// netns "" runs fn in the caller's namespace (on the caller's thread).
core::Status runInNetns(const std::string& netns, const std::function<core::Status()>& fn);

// Runs fn on a thread in a brand-new, empty network namespace (unshare), used to probe kernel
// features without touching any real interface.
core::Status runInScratchNetns(const std::function<core::Status()>& fn);

// /run/netns/NAME exists.
bool netnsExists(const std::string& netns);

// Closes the netlink sockets this process keeps open inside named namespaces (link changes reuse
// them, injectors/sys/route_socket_pool.h). An open socket keeps a deleted namespace alive with
// its devices, so whoever deletes lab namespaces calls this first; idle sockets close by
// themselves after 10 s.
void releasePooledNetnsSockets();

}  // namespace fabric_chaos::sys
