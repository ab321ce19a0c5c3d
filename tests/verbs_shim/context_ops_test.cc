// The verbs shim's hold on a context's data path, against a fake provider context: ibv_poll_cq,
// ibv_post_send and ibv_post_recv (verbs.h's inline calls through ctx->ops, exactly what an
// unmodified program compiles to) reach the provider unchanged while unarmed, and return the
// armed faults' statuses and errnos to the matching QPs only. No RDMA device is needed.

#include "verbs_shim/sys/context_ops.h"

#include <gtest/gtest.h>
#include <infiniband/verbs.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "verbs_shim/sys/held_completions.h"
#include "verbs_shim/sys/qp_registry.h"

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
// The QPs the shim moved to error, by number, in order (the fake's modify_qp).
std::vector<uint32_t> g_errored;
int recordError(ibv_qp* qp) {
  g_errored.push_back(qp->qp_num);
  return 0;
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
    qp17_.qp_type = IBV_QPT_RC;
    qp18_.qp_type = IBV_QPT_UD;
    g_posted_sends = 0;
    g_posted_recvs = 0;
    g_batch = 4;
    g_errored.clear();
    setQpErrorAction(recordError);
    registerQp(&qp17_);
    registerQp(&qp18_);
    ASSERT_TRUE(interpose(&context_).isOk());
  }
  void TearDown() override {
    disarm();
    forgetCq(&cq_);
    unregisterQp(&qp17_);
    unregisterQp(&qp18_);
    setQpErrorAction(nullptr);
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

TEST_F(ContextOps, ACqeErrorMovesItsQpToErrorOnceAsANicDoes) {
  ShimFault fault;
  fault.kind = ShimFaultKind::kCqeError;
  fault.filter.qp_num = 17;
  fault.trigger.count = 2;
  arm({fault}, 1);
  EXPECT_EQ(pollStatuses(), (std::vector<int>{12, 0, 12, 0}));
  EXPECT_EQ(g_errored, (std::vector<uint32_t>{17})) << "moved to error once, not per completion";
}

TEST_F(ContextOps, AQpErrorStrikesTheQpOfAMatchingPostAndLetsThePostThrough) {
  ShimFault fault;
  fault.kind = ShimFaultKind::kQpError;
  fault.filter.qp_type = ShimQpType::kUd;  // QP 18
  fault.filter.opcode = ShimOpcode::kRdmaWrite;
  arm({fault}, 1);
  ibv_send_wr send{};
  send.opcode = IBV_WR_SEND;
  ibv_send_wr* bad = nullptr;
  EXPECT_EQ(ibv_post_send(&qp18_, &send, &bad), 0);
  EXPECT_TRUE(g_errored.empty()) << "a SEND is not an RDMA WRITE";
  send.opcode = IBV_WR_RDMA_WRITE;
  EXPECT_EQ(ibv_post_send(&qp17_, &send, &bad), 0);
  EXPECT_TRUE(g_errored.empty()) << "QP 17 is RC, not UD";
  EXPECT_EQ(ibv_post_send(&qp18_, &send, &bad), 0);
  EXPECT_EQ(g_errored, (std::vector<uint32_t>{18}));
  EXPECT_EQ(g_posted_sends, 3) << "the provider gets the post and fails it as the QP's state says";
  // Completions are events too: QP 17's first one errors it, statuses untouched.
  fault.filter = {};
  fault.filter.qp_num = 17;
  arm({fault}, 1);
  EXPECT_EQ(pollStatuses(), (std::vector<int>{0, 0, 0, 0}));
  EXPECT_EQ(g_errored, (std::vector<uint32_t>{18, 17}));
}

TEST_F(ContextOps, ACompletionDelayHoldsTheBatchAndReleasesItInOrderWhenDue) {
  ShimFault fault;
  fault.kind = ShimFaultKind::kCompletionDelay;
  fault.delay_ms = 150;
  fault.trigger.count = 1;
  arm({fault}, 1);
  ibv_wc wc[8];
  const auto started = std::chrono::steady_clock::now();
  EXPECT_EQ(ibv_poll_cq(&cq_, 8, wc), 0) << "the first batch is held";
  EXPECT_TRUE(anyHeld());
  EXPECT_EQ(ibv_poll_cq(&cq_, 8, wc), 0) << "nothing newer overtakes the held batch";
  disarm();  // held completions are not lost when the fault goes
  int got = 0;
  while ((got = ibv_poll_cq(&cq_, 2, wc)) == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_GE(std::chrono::steady_clock::now() - started, std::chrono::milliseconds(150));
  ASSERT_EQ(got, 2) << "at most num_entries at a time";
  EXPECT_EQ(wc[0].wr_id, 0u);
  EXPECT_EQ(wc[1].wr_id, 1u);
  ASSERT_EQ(ibv_poll_cq(&cq_, 8, wc), 2);
  EXPECT_EQ(wc[0].wr_id, 2u);
  EXPECT_EQ(wc[1].wr_id, 3u);
  EXPECT_FALSE(anyHeld());
  EXPECT_EQ(ibv_poll_cq(&cq_, 8, wc), 4) << "then the provider's own, as before";
}

TEST_F(ContextOps, ARegistrationFailureIsDecidedPerProtectionDomainsDevice) {
  ibv_pd pd{};
  pd.context = &context_;
  EXPECT_EQ(regMrFailure(&pd), 0);
  ShimFault fault;
  fault.kind = ShimFaultKind::kRegMrFail;
  fault.error = EFAULT;
  fault.filter.device = "rxe0";
  fault.trigger.count = 1;
  arm({fault}, 1);
  EXPECT_EQ(regMrFailure(&pd), EFAULT);
  EXPECT_EQ(regMrFailure(&pd), 0) << "count 1 is spent";
  ASSERT_EQ(injections().size(), 1u);
  EXPECT_EQ(injections()[0].fired, 1);
  EXPECT_EQ(interposedDevices(), (std::vector<std::string>{"rxe0"}));
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
