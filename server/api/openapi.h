#pragma once
// The OpenAPI 3.1 document of the whole API (server/api/openapi.json), built into the binary at
// build time (server/CMakeLists.txt), so the document served by GET /v1/openapi.json is the one
// the tests hold against the router and real responses (docs/api.md, "The OpenAPI document").
// Immutable; safe from any thread.

#include <string_view>

namespace fabric_chaos::api {

// The document's JSON text, byte for byte as in the source tree.
std::string_view openApiDocument();

}  // namespace fabric_chaos::api
