// NetworkSplitExchange (client/split_exchange.h): the worker's wait for the coordinator's gradient
// ends with the gradient, with Aborted when the task's stop token is requested, with
// DeadlineExceeded at the task's deadline, and with a PROTOCOL_VIOLATION for a gradient that does
// not answer the batch in flight.
#include "client/split_exchange.h"

#include <gtest/gtest.h>

#include <thread>

#include "compression/dense_codec.h"
#include "protocol/wire.h"

namespace tributary {
namespace {

using namespace std::chrono_literals;

TaskAssignment SplitTask() {
  TaskAssignment t;
  t.round = 4;
  t.split_cut = 3;
  t.split_codec.spec = "dense";
  return t;
}

// A coordinator that answers each batch from another thread, `delay` later, with gradient 2 * x
// (or for batch `batch_offset` further on).
struct FakeServer {
  std::chrono::milliseconds delay{0};
  uint64_t batch_offset = 0;
  NetworkSplitExchange* exchange = nullptr;
  std::vector<std::thread> threads;
  std::function<void(Message)> Send() {
    return [this](Message m) {
      const SplitActivations a = std::get<SplitActivations>(m);
      NetworkSplitExchange* to = exchange;
      threads.emplace_back([this, a, to] {
        std::this_thread::sleep_for(delay);
        std::vector<float> x(a.activations.num_floats);
        std::memcpy(x.data(), a.activations.bytes.data(), x.size() * 4);
        for (float& v : x) v *= 2;
        SplitGradient g{
            a.round,
            a.batch + batch_offset,
            1.5,
            1,
            {"dense", a.activations.layout_fingerprint, x.size(), *DenseCodec().Encode(x)}};
        to->Deliver(g);
      });
    };
  }
  // Before the exchanges it answers go away.
  void Join() {
    for (auto& t : threads) t.join();
    threads.clear();
  }
  ~FakeServer() { Join(); }
};

TEST(NetworkSplitExchangeTest, ReturnsTheCoordinatorsGradient) {
  FakeServer server;
  std::stop_source stop;
  NetworkSplitExchange ex(*SplitTaskChannel::Create(SplitTask(), 77), server.Send(),
                          stop.get_token(), std::chrono::steady_clock::now() + 10s);
  server.exchange = &ex;
  const std::vector<float> acts = {1, 2, 3, 4};
  const std::vector<uint8_t> labels = {1, 2};
  for (int batch = 0; batch < 3; ++batch) {
    Result<CutGradient> g = ex.Exchange(acts, labels);
    ASSERT_TRUE(g.ok()) << g.status();
    EXPECT_EQ(g->gradient, (std::vector<float>{2, 4, 6, 8}));
    EXPECT_EQ(g->loss_sum, 1.5);
  }
  server.Join();
}

TEST(NetworkSplitExchangeTest, StopsOnRequestAndAtTheDeadline) {
  FakeServer server;
  server.delay = 300ms;  // never in time
  std::stop_source stop;
  NetworkSplitExchange ex(*SplitTaskChannel::Create(SplitTask(), 77), server.Send(),
                          stop.get_token(), std::chrono::steady_clock::now() + 10s);
  server.exchange = &ex;
  std::thread stopper([&] {
    std::this_thread::sleep_for(50ms);
    stop.request_stop();
  });
  const std::vector<float> acts = {1, 2};
  const std::vector<uint8_t> labels = {1};
  Result<CutGradient> g = ex.Exchange(acts, labels);
  stopper.join();
  EXPECT_EQ(g.status().code(), StatusCode::kAborted) << g.status();

  std::stop_source never;
  NetworkSplitExchange late(*SplitTaskChannel::Create(SplitTask(), 77), server.Send(),
                            never.get_token(), std::chrono::steady_clock::now() + 50ms);
  server.exchange = &late;
  g = late.Exchange(acts, labels);
  EXPECT_EQ(g.status().code(), StatusCode::kDeadlineExceeded) << g.status();
  EXPECT_NE(g.status().message().find("split batch 0"), std::string::npos) << g.status();
  server.Join();
}

TEST(NetworkSplitExchangeTest, AGradientForAnotherBatchIsAProtocolViolation) {
  FakeServer server;
  server.batch_offset = 1;
  std::stop_source stop;
  NetworkSplitExchange ex(*SplitTaskChannel::Create(SplitTask(), 77), server.Send(),
                          stop.get_token(), std::chrono::steady_clock::now() + 10s);
  server.exchange = &ex;
  const std::vector<float> acts = {1, 2};
  const std::vector<uint8_t> labels = {1};
  Result<CutGradient> g = ex.Exchange(acts, labels);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(ProtocolErrorCodeOf(g.status()), ErrorCode::kProtocolViolation) << g.status();
  EXPECT_NE(g.status().message().find("round 4 batch 1 answers no batch in flight"),
            std::string::npos)
      << g.status();
  server.Join();
}

}  // namespace
}  // namespace tributary
