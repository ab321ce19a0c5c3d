// The main() of every test executable (cmake/FabricChaos.cmake links it instead of gtest_main):
// gtest and gmock as usual, plus the CI skip policy (tests/support/ci_skip_policy.h).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <iostream>

#include "tests/support/ci_skip_policy.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleMock(&argc, argv);
  auto* policy =
      new fabric_chaos::testing::CiSkipPolicy(fabric_chaos::testing::ciEnvironment(), std::cout);
  ::testing::UnitTest::GetInstance()->listeners().Append(policy);  // gtest owns it
  const int code = RUN_ALL_TESTS();
  return policy->ledger().exitCode(code);
}
