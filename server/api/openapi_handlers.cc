// GET /v1/openapi.json: the embedded OpenAPI document, served as it is in the source tree (not
// re-serialized), public like /healthz (server/auth/policy.cc).

#include <cstddef>

#include "server/api/handlers.h"
#include "server/api/openapi.h"

// Generated from server/api/openapi.json by cmake/embed_bytes.cmake (server/CMakeLists.txt).
extern const unsigned char fc_openapi_document[];
extern const std::size_t fc_openapi_document_size;

namespace fabric_chaos::api {

std::string_view openApiDocument() {
  return {reinterpret_cast<const char*>(fc_openapi_document), fc_openapi_document_size};
}

namespace internal {

Response getOpenApi(Context&, const Call&) {
  Response response;
  response.status = 200;
  response.content_type = "application/json";
  response.body = std::string(openApiDocument());
  return response;
}

}  // namespace internal
}  // namespace fabric_chaos::api
