// The verbs shim's hold on a context's data path, against a fake provider context: ibv_poll_cq,
// ibv_post_send and ibv_post_recv (verbs.h's inline calls through ctx->ops, exactly what an
// unmodified program compiles to) reach the provider unchanged while unarmed, and return the
// armed faults' statuses and errnos to the matching QPs only. No RDMA device is needed.

#include "verbs_shim/sys/context_ops.h"

#include <gtest/gtest.h>
#include <infiniband/verbs.h>

#include <cerrno>
#include <cstring>

namespace fabric_chaos::verbs_shim {
namespace {

// The fake provider: every poll returns `batch` successful completions alternating QPs 17 and
// 18; posts succeed and are counted.
int g_batch = 4;
int g_posted_sends = 0;
int g_posted_recvs = 0;

int providerPollCq(ibv_cq*, int num_entries, ibv_wc* wc) {
  const int n = std::min(num_entries, g_batch);
  for (int i = 0; i < n; ++i) {
    std::memset(&wc[i], 0, sizeof(wc[i]));
    wc[i].status = IBV_WC_SUCCESS;
    wc[i].qp_num = i % 2 == 0 ? 17 : 18;
    wc[i].wr_id = static_cast<uint64_t>(i);
  }
  return n;
}
int providerPostSend(ibv_qp*, ibv_send_wr*, ibv_send_wr**) {
  ++g_posted_sends;
  return 0;
}
int providerPostRecv(ibv_qp*, ibv_recv_wr*, ibv_recv_wr**) {
  ++g_posted_recvs;
  return 0;
}

class ContextOps : public ::testing::Test {
 protected:
  void SetUp() override {
    std::strcpy(device_.name, "rxe0");
    context_.device = &device_;
    context_.ops.poll_cq = providerPollCq;
    context_.ops.post_send = providerPostSend;
    context_.ops.post_recv = providerPostRecv;
    cq_.context = &context_;
    qp17_.context = &context_;
    qp17_.qp_num = 17;
    qp18_.context = &context_;
    qp18_.qp_num = 18;
    g_posted_sends = 0;
    g_posted_recvs = 0;
    ASSERT_TRUE(interpose(&context_).isOk());
  }
  void TearDown() override {
    disarm();
    release(&context_);
  }
  std::vector<int> pollStatuses() {
    ibv_wc wc[8];
    const int n = ibv_poll_cq(&cq_, 8, wc);
    std::vector<int> out;
    for (int i = 0; i < n; ++i) out.push_back(wc[i].status);
    return out;
  }

  ibv_device device_{};
  ibv_context context_{};
  ibv_cq cq_{};
  ibv_qp qp17_{};
  ibv_qp qp18_{};
};

TEST_F(ContextOps, UnarmedEverythingReachesTheProviderUnchanged) {
  EXPECT_TRUE(interposed(&context_));
  EXPECT_NE(context_.ops.poll_cq, providerPollCq);  // the shim's wrapper is in place
  EXPECT_EQ(pollStatuses(), (std::vector<int>{0, 0, 0, 0}));
  ibv_send_wr send{};
  ibv_send_wr* bad_send = nullptr;
  EXPECT_EQ(ibv_post_send(&qp17_, &send, &bad_send), 0);
  ibv_recv_wr recv{};
  ibv_recv_wr* bad_recv = nullptr;
  EXPECT_EQ(ibv_post_recv(&qp17_, &recv, &bad_recv), 0);
  EXPECT_EQ(g_posted_sends, 1);
  EXPECT_EQ(g_posted_recvs, 1);
  // Interposing twice changes nothing; releasing puts the provider's ops back.
  ASSERT_TRUE(interpose(&context_).isOk());
  release(&context_);
  EXPECT_EQ(context_.ops.poll_cq, providerPollCq);
  EXPECT_EQ(context_.ops.post_send, providerPostSend);
  EXPECT_FALSE(interposed(&context_));
  ASSERT_TRUE(interpose(&context_).isOk());
}

TEST_F(ContextOps, ACqeErrorHitsTheFilteredQpsCompletionsAsTheTriggerSays) {
  ShimFault fault;
  fault.kind = ShimFaultKind::kCqeError;
  fault.filter.qp_num = 17;
  fault.status = 12;  // retry_exc_err
  fault.trigger.every_nth = 2;
  arm({fault}, 1);
  // QP 17's completions are entries 0 and 2 of each poll; every second one is failed.
  EXPECT_EQ(pollStatuses(), (std::vector<int>{0, 0, 12, 0}));
  EXPECT_EQ(pollStatuses(), (std::vector<int>{0, 0, 12, 0}));
  ASSERT_EQ(injections().size(), 1u);
  EXPECT_EQ(injections()[0].seen, 4);
  EXPECT_EQ(injections()[0].fired, 2);
  disarm();
  EXPECT_EQ(pollStatuses(), (std::vector<int>{0, 0, 0, 0}));
  EXPECT_TRUE(injections().empty());
}

TEST_F(ContextOps, ADeviceFilterThatDoesNotMatchInjectsNothing) {
  ShimFault fault;
  fault.kind = ShimFaultKind::kCqeError;
  fault.filter.device = "mlx5_0";
  arm({fault}, 1);
  EXPECT_EQ(pollStatuses(), (std::vector<int>{0, 0, 0, 0}));
  fault.filter.device = "rxe0";
  fault.status = 10;  // rem_access_err
  fault.trigger.count = 3;
  arm({fault}, 1);
  EXPECT_EQ(pollStatuses(), (std::vector<int>{10, 10, 10, 0}));
}

TEST_F(ContextOps, APostFailureReturnsItsErrnoAndTheRequestAsBad) {
  ShimFault send_fail;
  send_fail.kind = ShimFaultKind::kPostSendFail;
  send_fail.filter.qp_num = 18;
  send_fail.error = ENOMEM;
  ShimFault recv_fail;
  recv_fail.kind = ShimFaultKind::kPostRecvFail;
  recv_fail.error = EAGAIN;
  recv_fail.trigger.count = 1;
  arm({send_fail, recv_fail}, 1);
  ibv_send_wr send{};
  ibv_send_wr* bad_send = nullptr;
  EXPECT_EQ(ibv_post_send(&qp17_, &send, &bad_send), 0);  // not the filtered QP
  EXPECT_EQ(ibv_post_send(&qp18_, &send, &bad_send), ENOMEM);
  EXPECT_EQ(bad_send, &send);
  EXPECT_EQ(g_posted_sends, 1) << "the failed post never reached the provider";
  ibv_recv_wr recv{};
  ibv_recv_wr* bad_recv = nullptr;
  EXPECT_EQ(ibv_post_recv(&qp17_, &recv, &bad_recv), EAGAIN);
  EXPECT_EQ(bad_recv, &recv);
  EXPECT_EQ(ibv_post_recv(&qp17_, &recv, &bad_recv), 0);  // its count of 1 is spent
  EXPECT_EQ(g_posted_recvs, 1);
}

TEST_F(ContextOps, ContextsBeyondTheTableRunWithoutFaults) {
  std::vector<ibv_context> more(kMaxContexts);
  int refused = 0;
  for (ibv_context& c : more) {
    c.ops.poll_cq = providerPollCq;
    refused += !interpose(&c).isOk();
  }
  EXPECT_EQ(refused, 1);  // the fixture's context holds one slot
  EXPECT_EQ(more.back().ops.poll_cq, providerPollCq) << "a refused context is left as it was";
  for (ibv_context& c : more) release(&c);
}

}  // namespace
}  // namespace fabric_chaos::verbs_shim
