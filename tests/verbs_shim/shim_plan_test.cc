// The verbs shim's fault plan: what the agent may send it, what is refused and how it is named,
// and the triggers' decisions (every Nth, after T ms, count, probability). Pure.

#include <gtest/gtest.h>

#include <cerrno>

#include "verbs_shim/plan.h"

namespace fabric_chaos::verbs_shim {
namespace {

using nlohmann::json;

TEST(ShimPlan, ReadsAFaultAndWritesItBack) {
  const json doc = {
      {"kind", "cqe_error"},
      {"filter", {{"qp_num", 17}, {"device", "rxe0"}}},
      {"trigger", {{"probability", 0.5}, {"every_nth", 3}, {"after_ms", 200}, {"count", 4}}},
      {"status", "retry_exc_err"}};
  auto fault = shimFaultFromJson(doc);
  ASSERT_TRUE(fault.isOk()) << fault.status().message();
  EXPECT_EQ(fault->kind, ShimFaultKind::kCqeError);
  EXPECT_EQ(fault->filter.qp_num, std::optional<uint32_t>(17));
  EXPECT_EQ(fault->filter.device, "rxe0");
  EXPECT_EQ(fault->status, 12);  // what NCCL prints as status=12
  EXPECT_EQ(fault->trigger.every_nth, 3);
  EXPECT_EQ(toJson(*fault), doc);

  auto post = shimFaultFromJson({{"kind", "post_send_fail"}, {"errno", "EAGAIN"}});
  ASSERT_TRUE(post.isOk()) << post.status().message();
  EXPECT_EQ(post->error, EAGAIN);
  EXPECT_EQ(post->trigger.count, -1);
  EXPECT_EQ(toJson(*post)["errno"], "EAGAIN");
  EXPECT_FALSE(toJson(*post)["trigger"].contains("count"));
  EXPECT_EQ(shimFaultFromJson({{"kind", "post_recv_fail"}})->error, ENOMEM);

  // Every kind, with the knobs and filters it takes, reads back as written.
  const std::vector<json> others = {
      {{"kind", "qp_error"},
       {"filter", {{"qp_type", "rc"}, {"opcode", "rdma_write"}}},
       {"trigger", {{"probability", 1.0}, {"every_nth", 1}, {"after_ms", 0}, {"count", 1}}}},
      {{"kind", "completion_delay"},
       {"filter", {{"opcode", "recv"}}},
       {"trigger", {{"probability", 1.0}, {"every_nth", 10}, {"after_ms", 0}}},
       {"delay_ms", 250}},
      {{"kind", "reg_mr_fail"},
       {"filter", {{"device", "rxe0"}}},
       {"trigger", {{"probability", 1.0}, {"every_nth", 1}, {"after_ms", 0}, {"count", 2}}},
       {"errno", "EFAULT"}},
  };
  for (const json& doc : others) {
    auto fault = shimFaultFromJson(doc);
    ASSERT_TRUE(fault.isOk()) << doc.dump() << ": " << fault.status().message();
    EXPECT_EQ(toJson(*fault), doc);
  }
  EXPECT_EQ(shimFaultFromJson({{"kind", "reg_mr_fail"}})->error, ENOMEM);
  EXPECT_EQ(shimFaultFromJson({{"kind", "completion_delay"}})->delay_ms, 100);
}

TEST(ShimPlan, StatusNamesAreLibibverbsOwn) {
  EXPECT_EQ(wcStatusOf("wr_flush_err"), std::optional<int>(5));
  EXPECT_EQ(wcStatusOf("rem_access_err"), std::optional<int>(10));
  EXPECT_EQ(wcStatusOf("general_err"), std::optional<int>(21));
  EXPECT_FALSE(wcStatusOf("RETRY_EXC_ERR").has_value());
  EXPECT_STREQ(wcStatusName(13), "rnr_retry_exc_err");
  EXPECT_EQ(wcStatusName(24), nullptr);
  EXPECT_EQ(wcStatusName(-1), nullptr);
}

TEST(ShimPlan, RefusalsNameTheField) {
  const std::vector<std::pair<json, std::string>> cases = {
      {json::array(), "fault: must be an object"},
      {{{"kind", "qp_melt"}},
       "kind: must be cqe_error, qp_error, post_send_fail, post_recv_fail, completion_delay or "
       "reg_mr_fail"},
      {{{"kind", "cqe_error"}, {"status", "retry_exceeded"}}, "status: must name an error status"},
      {{{"kind", "cqe_error"}, {"status", "success"}}, "status: must name an error status"},
      {{{"kind", "cqe_error"}, {"trigger", {{"probability", 1.5}}}},
       "trigger.probability: must be a number from 0 to 1"},
      {{{"kind", "cqe_error"}, {"trigger", {{"every_nth", 0}}}},
       "trigger.every_nth: must be an integer of at least 1"},
      {{{"kind", "cqe_error"}, {"trigger", {{"count", 0}}}},
       "trigger.count: must be an integer of at least 1"},
      {{{"kind", "cqe_error"}, {"trigger", {{"after_ms", -5}}}},
       "trigger.after_ms: must be an integer of at least 0"},
      {{{"kind", "cqe_error"}, {"filter", {{"qp", 3}}}}, "filter.qp: unknown field"},
      {{{"kind", "cqe_error"}, {"filter", {{"qp_num", 1 << 24}}}}, "filter.qp_num: must be a QP"},
      {{{"kind", "cqe_error"}, {"errno", "ENOMEM"}},
       "errno: is for post_send_fail, post_recv_fail and reg_mr_fail only"},
      {{{"kind", "post_send_fail"}, {"status", "fatal_err"}}, "status: is for cqe_error only"},
      {{{"kind", "post_send_fail"}, {"errno", "EIO"}},
       "errno: must be ENOMEM, EAGAIN, EINVAL or EFAULT"},
      {{{"kind", "cqe_error"}, {"armed", true}}, "armed: unknown field"},
      {{{"kind", "cqe_error"}, {"delay_ms", 5}}, "delay_ms: is for completion_delay only"},
      {{{"kind", "completion_delay"}, {"delay_ms", 0}},
       "delay_ms: must be an integer of at least 1"},
      {{{"kind", "completion_delay"}, {"delay_ms", 600001}}, "delay_ms: must be at most 600000"},
      {{{"kind", "reg_mr_fail"}, {"filter", {{"qp_num", 3}}}},
       "filter.qp_num: reg_mr_fail sees no QP; only device applies"},
      {{{"kind", "cqe_error"}, {"filter", {{"qp_type", "xrc"}}}},
       "filter.qp_type: must be rc, uc or ud"},
      {{{"kind", "cqe_error"}, {"filter", {{"opcode", "write"}}}},
       "filter.opcode: must be send, rdma_write, rdma_read, atomic or recv"},
      {{{"kind", "post_send_fail"}, {"filter", {{"opcode", "recv"}}}},
       "filter.opcode: post_send_fail never sees recv work requests"},
      {{{"kind", "post_recv_fail"}, {"filter", {{"opcode", "send"}}}},
       "filter.opcode: post_recv_fail never sees send work requests"},
      {{{"kind", "qp_error"}, {"status", "fatal_err"}}, "status: is for cqe_error only"},
  };
  for (const auto& [doc, says] : cases) {
    auto fault = shimFaultFromJson(doc);
    ASSERT_FALSE(fault.isOk()) << doc.dump();
    EXPECT_EQ(fault.status().code(), core::StatusCode::kInvalidArgument) << doc.dump();
    EXPECT_NE(fault.status().message().find(says), std::string::npos)
        << doc.dump() << ": " << fault.status().message();
  }
}

TEST(ShimPlan, TriggersCountEveryNthAfterADelayUpToACount) {
  ShimTrigger every_third;
  every_third.every_nth = 3;
  every_third.after_ms = 100;
  every_third.count = 2;
  TriggerState state(every_third, 1);
  EXPECT_FALSE(state.fire(50));  // before after_ms: not even counted
  EXPECT_EQ(state.seen(), 0);
  std::vector<bool> fired;
  for (int i = 0; i < 12; ++i) fired.push_back(state.fire(150));
  EXPECT_EQ(fired, (std::vector<bool>{false, false, true, false, false, true, false, false, false,
                                      false, false, false}));
  EXPECT_EQ(state.fired(), 2);  // the count is spent
}

TEST(ShimPlan, AProbabilityFiresAboutThatShareAndReproducesFromItsSeed) {
  ShimTrigger quarter;
  quarter.probability = 0.25;
  TriggerState a(quarter, 42);
  TriggerState b(quarter, 42);
  int fired = 0;
  for (int i = 0; i < 10000; ++i) {
    const bool fa = a.fire(0);
    EXPECT_EQ(fa, b.fire(0));
    fired += fa;
  }
  EXPECT_GT(fired, 2300);
  EXPECT_LT(fired, 2700);
  ShimTrigger never;
  never.probability = 0;
  TriggerState off(never, 7);
  for (int i = 0; i < 1000; ++i) EXPECT_FALSE(off.fire(0));
}

}  // namespace
}  // namespace fabric_chaos::verbs_shim
