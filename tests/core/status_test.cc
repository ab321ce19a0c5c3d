#include "core/status.h"

#include <gtest/gtest.h>

#include <cerrno>

namespace fabric_chaos::core {
namespace {

TEST(Status, OkByDefault) {
  Status s;
  EXPECT_TRUE(s.isOk());
  EXPECT_EQ(s.toString(), "OK");
}

TEST(Status, CarriesCodeMessageAndOrigin) {
  Status s(StatusCode::kNotFound, "no such device p9", 19);
  EXPECT_FALSE(s.isOk());
  EXPECT_EQ(s.origin(), 19);
  EXPECT_EQ(s.toString(), "NOT_FOUND: no such device p9 (origin 19)");
  EXPECT_EQ(s.withContext("link down").message(), "link down: no such device p9");
  EXPECT_EQ(s.withContext("link down").code(), StatusCode::kNotFound);
}

struct ErrnoCase {
  int err;
  StatusCode code;
};

TEST(Status, ErrnoMapsToTheClosestCode) {
  const ErrnoCase cases[] = {
      {ENODEV, StatusCode::kNotFound},         {ENOENT, StatusCode::kNotFound},
      {EPERM, StatusCode::kPermissionDenied},  {EACCES, StatusCode::kPermissionDenied},
      {EOPNOTSUPP, StatusCode::kNotSupported}, {EEXIST, StatusCode::kAlreadyExists},
      {EINVAL, StatusCode::kInvalidArgument},  {ECONNREFUSED, StatusCode::kUnavailable},
      {ETIMEDOUT, StatusCode::kTimeout},       {EIO, StatusCode::kInternal},
  };
  for (const auto& c : cases) {
    Status s = errnoStatus(c.err, "open");
    EXPECT_EQ(s.code(), c.code) << c.err;
    EXPECT_EQ(s.origin(), c.err);
    EXPECT_EQ(s.message().rfind("open: ", 0), 0u) << s.message();
  }
}

Result<int> half(int value) {
  if (value % 2 != 0) return Status(StatusCode::kInvalidArgument, "odd");
  return value / 2;
}

Status useHalf(int value, int* out) {
  auto r = half(value);
  FC_RETURN_IF_ERROR(r.status());
  *out = r.value();
  return Status::ok();
}

TEST(Result, HoldsAValueOrAStatus) {
  auto ok = half(8);
  ASSERT_TRUE(ok.isOk());
  EXPECT_EQ(*ok, 4);
  auto bad = half(3);
  ASSERT_FALSE(bad.isOk());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  int out = 0;
  EXPECT_TRUE(useHalf(10, &out).isOk());
  EXPECT_EQ(out, 5);
  EXPECT_EQ(useHalf(5, &out).message(), "odd");
}

}  // namespace
}  // namespace fabric_chaos::core
