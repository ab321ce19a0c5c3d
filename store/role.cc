// Role names as they appear in the API and the tokens table.

#include "store/store.h"

namespace fabric_chaos::store {

const char* roleName(Role role) {
  switch (role) {
    case Role::kViewer:
      return "viewer";
    case Role::kOperator:
      return "operator";
    case Role::kAdmin:
      return "admin";
  }
  return "viewer";
}

core::Result<Role> parseRole(const std::string& name) {
  for (Role role : {Role::kViewer, Role::kOperator, Role::kAdmin}) {
    if (name == roleName(role)) return role;
  }
  return core::Status(core::StatusCode::kInvalidArgument,
                      "role: must be one of viewer, operator, admin, got \"" + name + "\"");
}

}  // namespace fabric_chaos::store
