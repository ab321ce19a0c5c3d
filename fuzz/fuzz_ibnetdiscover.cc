// libFuzzer target: text -> parseIbnetdiscover (ib/ibnetdiscover.h), the parser of what
// `fabric-chaos fabric import --ibnetdiscover` reads from real subnets. Every input is answered
// with a subnet or a kInvalidArgument naming its line; a subnet's links name its own nodes, each
// cable once with its lower end first, and it serialises.

#include <cstddef>
#include <cstdint>
#include <string>
#include <tuple>
#include <utility>

#include "fuzz/fuzz_support.h"
#include "ib/ibnetdiscover.h"

namespace {

constexpr char kTarget[] = "fuzz_ibnetdiscover";

[[noreturn]] void fail(const std::string& what) { fabric_chaos::fuzz::fail(kTarget, what); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace ib = fabric_chaos::ib;
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto subnet = ib::parseIbnetdiscover(text);
  if (!subnet.isOk()) {
    fabric_chaos::fuzz::expectNamedError(kTarget, subnet.status(), "parseIbnetdiscover",
                                         /*input_codes_only=*/true);
    if (subnet.status().message().rfind("line ", 0) != 0) {
      fail("an error that names no line: " + subnet.status().message());
    }
    return 0;
  }
  for (const ib::IbLink& link : subnet->links) {
    if (ib::findNode(*subnet, link.a.node_guid) == nullptr ||
        ib::findNode(*subnet, link.b.node_guid) == nullptr) {
      fail("a link to a node the subnet does not have");
    }
    if (std::make_pair(link.b.node_guid, link.b.port) <
        std::make_pair(link.a.node_guid, link.a.port)) {
      fail("a link whose a end is not the lower");
    }
  }
  for (const ib::IbNode& node : subnet->nodes) {
    if (node.type == ib::IbNodeType::kChannelAdapter && node.role != ib::IbRole::kHca) {
      fail("a channel adapter that is not an hca");
    }
  }
  (void)ib::toJson(*subnet).dump();
  return 0;
}
