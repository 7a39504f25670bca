// Issue #27, item 12: the client's L2 clip (SecAggTask, differential privacy on the clients) and
// the coordinator's (norm clipping, differential privacy on the coordinator) are one function,
// ClipL2 (compression/l2_clip.h), and give the same bits for the same update.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "aggregation/fedavg.h"
#include "aggregation/norm_clip.h"
#include "client/secagg_task.h"
#include "privacy/dp/dp_aggregator.h"

namespace tributary {
namespace {

constexpr double kClip = 0.75;

// An update whose norm (about 11) is well above kClip, with values of many magnitudes.
std::vector<float> Update() {
  std::vector<float> u(4099);
  for (size_t i = 0; i < u.size(); ++i)
    u[i] = std::sin(0.37f * static_cast<float>(i + 1)) * std::pow(10.0f, -float(i % 3)) * 0.4f;
  return u;
}

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Records what a wrapping stage hands to its inner rule, exactly (scale 1 into zeros).
class Recorder final : public Strategy {
 public:
  std::string_view name() const override { return "recorder"; }
  Status BeginRound(const ModelWeights& global) override {
    seen.assign(global.size(), 0.0f);
    return Status::Ok();
  }
  Status Accumulate(uint64_t, const UpdateWriter& writer) override {
    BufferSink sink(seen);
    writer(sink, 1.0f);
    ++n;
    return Status::Ok();
  }
  size_t num_accumulated() const override { return n; }
  Result<ModelWeights> Finalize() override { return Status::FailedPrecondition("recorder"); }
  std::vector<float> seen;
  size_t n = 0;
};

UpdateWriter Dense(const std::vector<float>& v) {
  return [&v](UpdateSink& sink, float scale) { sink.AddDense(0, v, scale); };
}

TEST(SecAggClipTest, TheClientsClipAndTheCoordinatorsClipGiveIdenticalBits) {
  const std::vector<float> update = Update();
  ModelWeights zero = *ModelWeights::Create({{"w", {static_cast<int64_t>(update.size())}}});

  // The client: differential privacy on the clients, without noise.
  std::vector<float> client = update;
  ASSERT_TRUE(SecAggTask::ClipAndNoise(client, DpOnClients{kClip, 0.0, 0}, 1).ok());
  EXPECT_FALSE(SameBits(client, update));  // it did clip

  // The coordinator's norm clipping stage: what it hands to the wrapped rule.
  auto recorder = std::make_unique<Recorder>();
  Recorder* seen = recorder.get();
  NormClip clip(kClip, std::move(recorder));
  ASSERT_TRUE(clip.BeginRound(zero).ok());
  ASSERT_TRUE(clip.Accumulate(1, Dense(update)).ok());
  EXPECT_EQ(clip.num_clipped(), 1u);
  EXPECT_TRUE(SameBits(seen->seen, client));

  // Differential privacy on the coordinator, without noise: its released mean of the one update
  // is the fixed-point FedAvg of the client's clipped values, bit for bit.
  DpConfig dp;
  dp.enabled = true;
  dp.noise_multiplier = 0.0;
  dp.clip_norm = kClip;
  dp.expected_clients = 1;
  dp.delta = 1e-5;
  std::unique_ptr<DpAggregator> server = *DpAggregator::Create(dp, 1);
  server->BeginRound(update.size());
  Result<double> norm = server->AddUpdate(Dense(update));
  ASSERT_TRUE(norm.ok()) << norm.status();
  EXPECT_GT(*norm, kClip);
  std::vector<float> released = *server->Release(1, 1.0);
  FedAvg avg;
  ASSERT_TRUE(avg.BeginRound(zero).ok());
  ASSERT_TRUE(avg.Accumulate(1, Dense(client)).ok());
  ModelWeights from_client = *avg.Finalize();
  std::vector<float> expect(from_client.data().begin(), from_client.data().end());
  EXPECT_TRUE(SameBits(released, expect));
}

}  // namespace
}  // namespace tributary
