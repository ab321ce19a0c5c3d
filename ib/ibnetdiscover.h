#pragma once
// Reads the topology that `ibnetdiscover` (infiniband-diags) prints for a subnet into an IbSubnet
// (ib/subnet.h): its node records (switchguid / caguid / rtguid lines, then the node line with its
// port count, id and, after '#', the node description and a switch's base LID) and their port
// lines (local port, a channel adapter port's GUID, the remote node id and port, and after '#' the
// LIDs and the link's width and speed). Each link is listed from both ends; it appears once. The
// same parser serves a real subnet's output (`fabric-chaos fabric import --ibnetdiscover FILE`)
// and the simulated lab's. Pure.

#include <string>

#include "core/status.h"
#include "ib/subnet.h"

namespace fabric_chaos::ib {

// kInvalidArgument naming the line ("line 12: ...") for a node or port line that cannot be read,
// a port line before any node, or a link to a node id the text never defines; roles inferred.
core::Result<IbSubnet> parseIbnetdiscover(const std::string& text);

}  // namespace fabric_chaos::ib
