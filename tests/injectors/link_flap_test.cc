#include "injectors/link/link_flap.h"

#include <gtest/gtest.h>

#include "tests/fakes/fake_links.h"

namespace fabric_chaos::injectors {
namespace {

using core::StatusCode;

// A wrong shape is a 400, a well-typed value out of range a 422 (docs/faults.md).
constexpr StatusCode kShape = StatusCode::kInvalidArgument;
constexpr StatusCode kValue = StatusCode::kUnprocessable;

class LinkFlapTest : public ::testing::Test {
 protected:
  void SetUp() override { links_.addLink("h1", {"eth0", 0, true, true, ""}); }

  Fault fault(const std::string& ifname = "eth0") {
    return Fault{"link_flap", InterfaceTarget{"h1", ifname}, json{{"down_ms", 500}}};
  }

  fakes::FakeLinks links_;
  LinkFlap flap_{&links_};
};

TEST_F(LinkFlapTest, Info) {
  KindInfo info = flap_.info();
  EXPECT_EQ(info.kind, "link_flap");
  EXPECT_TRUE(info.available);
  EXPECT_EQ(info.backend, "netlink");
  EXPECT_FALSE(info.description.empty());
  EXPECT_FALSE(LinkFlap(nullptr).info().available);
}

TEST_F(LinkFlapTest, ValidationTable) {
  struct Case {
    json params;
    std::string error;  // "" = valid
    StatusCode code = kShape;
  };
  const std::vector<Case> cases = {
      {{{"down_ms", 1}}, ""},
      {{{"down_ms", 600000}, {"up_ms", 1}, {"count", 1000}}, ""},
      {{{"down_ms", 250}, {"up_ms", 600000}, {"count", 1}}, ""},
      {json::object(), "down_ms: required"},
      {{{"up_ms", 10}}, "down_ms: required"},
      {{{"down_ms", 0}}, "down_ms: must be an integer in 1..600000", kValue},
      {{{"down_ms", 600001}}, "down_ms: must be an integer in 1..600000", kValue},
      {{{"down_ms", -5}}, "down_ms: must be an integer in 1..600000", kValue},
      {{{"down_ms", 1.5}}, "down_ms: must be an integer in 1..600000"},
      {{{"down_ms", "100"}}, "down_ms: must be an integer in 1..600000"},
      {{{"down_ms", true}}, "down_ms: must be an integer in 1..600000"},
      {{{"down_ms", 100}, {"up_ms", 0}}, "up_ms: must be an integer in 1..600000", kValue},
      {{{"down_ms", 100}, {"count", 0}}, "count: must be an integer in 1..1000", kValue},
      {{{"down_ms", 100}, {"count", 1001}}, "count: must be an integer in 1..1000", kValue},
      {{{"down_ms", 100}, {"count", 2.0}}, "count: must be an integer in 1..1000"},
      {{{"down_ms", 100}, {"percent", 5}}, "percent: unknown parameter"},
      {json::array(), "params: must be an object"},
  };
  for (const Case& c : cases) {
    core::Status status = flap_.validate(c.params);
    if (c.error.empty()) {
      EXPECT_TRUE(status.isOk()) << c.params.dump() << " -> " << status.toString();
    } else {
      EXPECT_EQ(status.code(), c.code) << c.params.dump();
      EXPECT_EQ(status.message().rfind(c.error, 0), 0u)
          << c.params.dump() << " -> " << status.message();
    }
  }
  // Validation never touches the system.
  EXPECT_TRUE(links_.calls().empty());
}

TEST_F(LinkFlapTest, ApplyAndRevertAreIdempotent) {
  auto prior = flap_.capture(fault());
  ASSERT_TRUE(prior.isOk()) << prior.status().toString();
  EXPECT_EQ(*prior, (json{{"admin_up", true}}));

  ASSERT_TRUE(flap_.apply(fault()).isOk());
  ASSERT_TRUE(flap_.apply(fault()).isOk());
  EXPECT_FALSE(links_.link("h1", "eth0")->admin_up);
  auto observed = flap_.observe(fault());
  ASSERT_TRUE(observed.isOk());
  EXPECT_EQ(*observed, (json{{"admin_up", false}, {"carrier", false}, {"operstate", "down"}}));

  ASSERT_TRUE(flap_.revert(fault(), *prior).isOk());
  ASSERT_TRUE(flap_.revert(fault(), *prior).isOk());
  EXPECT_TRUE(links_.link("h1", "eth0")->admin_up);
  observed = flap_.observe(fault());
  ASSERT_TRUE(observed.isOk());
  EXPECT_EQ(*observed, (json{{"admin_up", true}, {"carrier", true}, {"operstate", "up"}}));
}

TEST_F(LinkFlapTest, RevertRestoresALinkThatWasAlreadyDown) {
  links_.addLink("h1", {"eth1", 0, false, false, ""});
  auto prior = flap_.capture(fault("eth1"));
  ASSERT_TRUE(prior.isOk());
  EXPECT_EQ(*prior, (json{{"admin_up", false}}));
  ASSERT_TRUE(flap_.apply(fault("eth1")).isOk());
  ASSERT_TRUE(flap_.revert(fault("eth1"), *prior).isOk());
  EXPECT_FALSE(links_.link("h1", "eth1")->admin_up) << "revert must not raise a link that was down";
}

TEST_F(LinkFlapTest, RevertWithoutPriorBringsTheLinkUp) {
  ASSERT_TRUE(flap_.apply(fault()).isOk());
  ASSERT_TRUE(flap_.revert(fault(), json()).isOk());
  EXPECT_TRUE(links_.link("h1", "eth0")->admin_up);
  ASSERT_TRUE(flap_.apply(fault()).isOk());
  ASSERT_TRUE(flap_.revert(fault(), json{{"admin_up", "yes"}}).isOk());  // malformed: default
  EXPECT_TRUE(links_.link("h1", "eth0")->admin_up);
}

TEST_F(LinkFlapTest, MissingDeviceIsNotFoundButRevertSucceeds) {
  auto prior = flap_.capture(fault("nope0"));
  EXPECT_EQ(prior.status().code(), StatusCode::kNotFound);
  EXPECT_NE(prior.status().message().find("no such device nope0"), std::string::npos);
  core::Status applied = flap_.apply(fault("nope0"));
  EXPECT_EQ(applied.code(), StatusCode::kNotFound);
  EXPECT_NE(applied.message().find("link_flap down nope0"), std::string::npos);
  // Nothing left to restore on a device that is gone.
  EXPECT_TRUE(flap_.revert(fault("nope0"), json{{"admin_up", true}}).isOk());
}

TEST_F(LinkFlapTest, FailuresCarryCodeAndContext) {
  links_.failOnCall(1, core::Status(StatusCode::kPermissionDenied, "Operation not permitted", 28));
  core::Status applied = flap_.apply(fault());
  EXPECT_EQ(applied.code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(applied.origin(), 28);
  EXPECT_EQ(applied.message(), "link_flap down eth0: Operation not permitted");
  EXPECT_TRUE(links_.link("h1", "eth0")->admin_up);

  ASSERT_TRUE(flap_.apply(fault()).isOk());  // call 2
  links_.failOnCall(3, core::Status(StatusCode::kUnavailable, "busy"));
  core::Status reverted = flap_.revert(fault(), json{{"admin_up", true}});
  EXPECT_EQ(reverted.code(), StatusCode::kUnavailable);
  EXPECT_EQ(reverted.message(), "link_flap restore eth0 up: busy");
  // The engine retries the revert; the next call goes through.
  EXPECT_TRUE(flap_.revert(fault(), json{{"admin_up", true}}).isOk());
  EXPECT_TRUE(links_.link("h1", "eth0")->admin_up);
}

TEST_F(LinkFlapTest, EmptyTargetIsRejected) {
  Fault bad{"link_flap", InterfaceTarget{"h1", ""}, json{{"down_ms", 5}}};
  EXPECT_EQ(flap_.apply(bad).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(flap_.capture(bad).status().message(), "target.ifname: required");
}

// A target of another type never reaches netlink: the kind refuses it in every call, naming
// itself and the type, so a scenario or journal entry of the wrong shape cannot touch a link.
TEST_F(LinkFlapTest, RefusesTargetsThatAreNotInterfacesWithoutTouchingTheSystem) {
  // Each target type that is not an interface, and how the refusal names it.
  const std::vector<std::pair<Target, std::string>> others = {
      {RdmaPortTarget{"rxe0", 1, 0}, "an rdma_port"},
      {SubnetManagerTarget{"0x2c9", ""}, "a subnet_manager"},
      {ProcessTarget{1234, std::nullopt}, "a process"},
      {TrafficSetTarget{{{"h1", "eth0"}}, {{"h2", "eth0"}}}, "a traffic_set"},
  };
  for (const auto& [target, type] : others) {
    SCOPED_TRACE(type);
    const Fault other{"link_flap", target, json{{"down_ms", 500}}};
    const std::string expected = "link_flap acts on an interface, not on " + type;
    EXPECT_EQ(flap_.capture(other).status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(flap_.capture(other).status().message(), expected);
    EXPECT_EQ(flap_.apply(other).message(), expected);
    EXPECT_EQ(flap_.revert(other, json{{"admin_up", false}}).message(), expected);
    EXPECT_EQ(flap_.observe(other).status().message(), expected);
  }
  EXPECT_TRUE(links_.calls().empty());
  EXPECT_TRUE(links_.link("h1", "eth0")->admin_up);
}

}  // namespace
}  // namespace fabric_chaos::injectors
