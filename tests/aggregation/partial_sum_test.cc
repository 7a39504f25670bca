// Issue #27, item 10: the fixed-point sum is exact for every run the configuration allows, its
// weights are the same integers in the terms and the normaliser, and partial sums of several
// processes add up to bitwise the one-process result.
#include "aggregation/partial_sum.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "aggregation/fedavg.h"
#include "aggregation/server_optimizer.h"
#include "aggregation/weighted_mean.h"
#include "core/rng.h"
#include "test_util.h"

namespace tributary {
namespace {

using testing::Dense;
using testing::FlatModel;

constexpr uint64_t k2To24 = uint64_t{1} << 24;
constexpr uint64_t k2To30 = uint64_t{1} << 30;

FixedPoint Units(double real) { return static_cast<FixedPoint>(real * FixedPointSink::kOne); }

// Just below 2^24 examples float(weight) is still the weight; just above it is not: the terms
// used float(weight) and the normaliser the double weight, so the mean was off.
TEST(ExactWeightsTest, WeightsJustBelowAndAbove2To24AreTheSameInTheTermsAndTheNormaliser) {
  for (uint64_t big : {k2To24 - 1, k2To24 + 1, k2To24 + 3, k2To30 - 1}) {
    SCOPED_TRACE(big);
    WeightedMean mean("test");
    mean.Reset(1);
    const std::vector<float> one = {1.0f}, minus = {-1.0f};
    ASSERT_TRUE(mean.CheckUpdate(UpdateStats{1.0, 1}, big).ok());
    ASSERT_TRUE(mean.Add(big, Dense(one)).ok());
    ASSERT_TRUE(mean.Add(1, Dense(minus)).ok());
    EXPECT_EQ(mean.total_weight(), big + 1);
    // The exact integer sum: (big - 1) in 2^-32 units.
    EXPECT_TRUE(mean.partial().sum.At(0) == static_cast<FixedPoint>(big - 1) << 32);
    const double exact = static_cast<double>(big - 1) / static_cast<double>(big + 1);
    EXPECT_NEAR(mean.MeanAt(0), exact, 1e-15);
    // float(big) would have given (float(big) - 1) / (big + 1): visibly different above 2^24.
    const double with_float =
        (static_cast<double>(static_cast<float>(big)) - 1.0) / static_cast<double>(big + 1);
    if (big > k2To24) {
      EXPECT_GT(std::fabs(mean.MeanAt(0) - with_float), 0.5 / static_cast<double>(big + 1));
    }
  }
}

// run.max_num_examples defaults to 2^30: eight updates of weight 2^30 - 1 and values near 1 sum
// to about 2^33 real, 2^65 fixed-point units: an int64 sum overflowed at the third update.
TEST(ExactWeightsTest, MaxNumExamples2To30WithLargeValuesSumsExactly) {
  const uint64_t w = k2To30 - 1;
  const std::vector<float> v = {0.9f, -0.9f, 0.5f};  // |w * v| < 2^30
  FedAvg avg;
  ASSERT_TRUE(avg.BeginRound(FlatModel(3)).ok());
  for (int u = 0; u < 8; ++u) {
    ASSERT_TRUE(avg.CheckUpdate(UpdateStats{0.9, 3}, w).ok());
    ASSERT_TRUE(avg.Accumulate(w, Dense(v)).ok());
  }
  const PartialSum& p = *avg.partial_sum();
  EXPECT_EQ(p.total_weight, 8 * w);
  EXPECT_EQ(p.count, 8u);
  // Each term is trunc(0.9f * w * 2^32), the double product the sink computes; eight of them.
  const FixedPoint term = static_cast<int64_t>(static_cast<double>(0.9f) * static_cast<double>(w) *
                                               FixedPointSink::kOne);
  EXPECT_TRUE(p.sum.At(0) == 8 * term);
  EXPECT_TRUE(p.sum.At(1) == -8 * term);
  EXPECT_GT(static_cast<double>(p.sum.At(0)), 0x1p64);  // an int64 could not hold it
  EXPECT_TRUE(p.sum.wide());                            // the int64 lane carried into the wide one
  Result<ModelWeights> next = avg.Finalize();
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ(next->data()[0], 0.9f);
  EXPECT_EQ(next->data()[1], -0.9f);
  EXPECT_EQ(next->data()[2], 0.5f);
}

TEST(ExactWeightsTest, UpdatesTheSumCannotHoldAreRefusedNamingTheNumbers) {
  FedAvg avg;
  ASSERT_TRUE(avg.BeginRound(FlatModel(2)).ok());
  // One term may not reach 2^30: at weight 2^30 a value of 1 is refused.
  Status s = avg.CheckUpdate(UpdateStats{1.0, 2}, k2To30);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("reaches 2^30"), std::string::npos) << s;
  EXPECT_NE(s.message().find("1073741824"), std::string::npos) << s;
  EXPECT_TRUE(avg.CheckUpdate(UpdateStats{0.99, 2}, k2To30).ok());
  EXPECT_FALSE(avg.CheckUpdate(UpdateStats{std::nan(""), 2}, 1).ok());
  // Weight 0 is no weight.
  EXPECT_FALSE(avg.CheckUpdate(UpdateStats{0.0, 2}, 0).ok());
  const std::vector<float> v = {0.0f, 0.0f};
  EXPECT_FALSE(avg.Accumulate(0, Dense(v)).ok());
  EXPECT_EQ(avg.num_accumulated(), 0u);

  // The running bound on the total weight: past 2^53 the normaliser would round.
  PartialSum p = PartialSum::Zero(2);
  p.total_weight = PartialSum::kMaxTotalWeight - 5;
  p.count = 1;
  EXPECT_TRUE(p.CheckWeight(5).ok());
  s = p.CheckWeight(6);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("2^53"), std::string::npos) << s;
  PartialSum q = PartialSum::Zero(2);
  q.total_weight = 6;
  q.count = 1;
  EXPECT_FALSE(p.Add(q).ok());
  EXPECT_EQ(p.total_weight, PartialSum::kMaxTotalWeight - 5);  // unchanged
}

// The int64 lane carries into the wide one only when its bound could pass 2^63: never in an
// ordinary round, at the third update of weight 2^30 - 1 and values near 1. Either way the value
// is the exact sum.
TEST(ExactWeightsTest, OnlyHugeTermsCarryIntoTheWideLane) {
  const std::vector<float> small = {0.01f, -0.02f}, large = {0.9f, -0.9f};
  WeightedMean mean("test");
  mean.Reset(2);
  for (int u = 0; u < 1000; ++u) ASSERT_TRUE(mean.Add(600, Dense(small)).ok());
  EXPECT_FALSE(mean.partial().sum.wide());
  const FixedPoint small_term =
      static_cast<int64_t>(static_cast<double>(0.01f) * 600.0 * FixedPointSink::kOne);
  EXPECT_TRUE(mean.partial().sum.At(0) == 1000 * small_term);
  ASSERT_TRUE(mean.Add(k2To30 - 1, Dense(large)).ok());
  ASSERT_TRUE(mean.Add(k2To30 - 1, Dense(large)).ok());
  EXPECT_FALSE(mean.partial().sum.wide());  // 1.8 * 2^62 still fits
  ASSERT_TRUE(mean.Add(k2To30 - 1, Dense(large)).ok());
  EXPECT_TRUE(mean.partial().sum.wide());
  const FixedPoint large_term = static_cast<int64_t>(
      static_cast<double>(0.9f) * static_cast<double>(k2To30 - 1) * FixedPointSink::kOne);
  EXPECT_TRUE(mean.partial().sum.At(0) == 1000 * small_term + 3 * large_term);
}

struct RoundInputs {
  ModelWeights global;
  std::vector<std::vector<float>> deltas;
  std::vector<uint64_t> weights;
};

// Twelve updates with weights from 1 to about 2^30, the large ones with small values.
RoundInputs MakeRound(size_t n) {
  RoundInputs r{FlatModel(n), {}, {}};
  Rng rng(27);
  for (float& v : r.global.data()) v = static_cast<float>(rng.Normal());
  for (int c = 0; c < 12; ++c) {
    const uint64_t w =
        c % 4 == 3 ? k2To30 - 1 - static_cast<uint64_t>(c) : 1 + rng.UniformInt(5000);
    const double scale = w > k2To24 ? 0.5 : 0.05;
    std::vector<float> d(n);
    for (float& v : d) v = static_cast<float>(std::clamp(rng.Normal() * scale, -0.99, 0.99));
    r.deltas.push_back(std::move(d));
    r.weights.push_back(w);
  }
  return r;
}

TEST(PartialSumTest, TheSumDoesNotDependOnTheOrderOfTheUpdates) {
  const RoundInputs r = MakeRound(3000);
  auto run = [&](std::vector<size_t> order) {
    FedAvg avg;
    EXPECT_TRUE(avg.BeginRound(r.global).ok());
    for (size_t c : order) EXPECT_TRUE(avg.Accumulate(r.weights[c], Dense(r.deltas[c])).ok());
    PartialSum p = *avg.partial_sum();
    return std::make_pair(p, avg.Finalize()->content_hash());
  };
  std::vector<size_t> order(12);
  std::iota(order.begin(), order.end(), 0);
  const auto a = run(order);
  std::reverse(order.begin(), order.end());
  const auto b = run(order);
  std::rotate(order.begin(), order.begin() + 5, order.end());
  const auto c = run(order);
  EXPECT_TRUE(a.first == b.first);
  EXPECT_TRUE(a.first == c.first);
  EXPECT_EQ(a.second, b.second);
  EXPECT_EQ(a.second, c.second);
}

// Three "processes" each fold a third of the round, send their partial sums as bytes, and a
// fourth merges them: the model is bitwise the one-process model, whatever the grouping.
TEST(PartialSumTest, MergedPartialSumsGiveTheOneProcessModelBitForBit) {
  const RoundInputs r = MakeRound(3000);
  FedAvg one;
  ASSERT_TRUE(one.BeginRound(r.global).ok());
  for (size_t c = 0; c < 12; ++c)
    ASSERT_TRUE(one.Accumulate(r.weights[c], Dense(r.deltas[c])).ok());
  const PartialSum whole = *one.partial_sum();
  const uint64_t one_hash = one.Finalize()->content_hash();

  for (size_t processes : {2u, 3u, 5u}) {
    SCOPED_TRACE(processes);
    std::vector<std::vector<uint8_t>> sent;
    for (size_t p = 0; p < processes; ++p) {
      FedAvg part;
      ASSERT_TRUE(part.BeginRound(r.global).ok());
      for (size_t c = p; c < 12; c += processes)
        ASSERT_TRUE(part.Accumulate(r.weights[c], Dense(r.deltas[c])).ok());
      Result<std::vector<uint8_t>> bytes = EncodePartialSum(*part.partial_sum());
      ASSERT_TRUE(bytes.ok()) << bytes.status();
      sent.push_back(std::move(*bytes));
    }
    FedAvg merged;
    ASSERT_TRUE(merged.BeginRound(r.global).ok());
    for (size_t p = processes; p-- > 0;) {  // in reverse, for good measure
      Result<PartialSum> got = DecodePartialSum(sent[p], 3000);
      ASSERT_TRUE(got.ok()) << got.status();
      ASSERT_TRUE(merged.MergePartialSum(*got).ok());
    }
    EXPECT_TRUE(*merged.partial_sum() == whole);
    EXPECT_EQ(merged.num_accumulated(), 12u);
    EXPECT_EQ(merged.Finalize()->content_hash(), one_hash);
  }

  // The server optimizers merge the same way.
  ServerOptimizer::Params params;
  ServerOptimizer a(ServerOptimizer::Kind::kAdam, params), b(ServerOptimizer::Kind::kAdam, params);
  ASSERT_TRUE(a.BeginRound(r.global).ok());
  ASSERT_TRUE(b.BeginRound(r.global).ok());
  for (size_t c = 0; c < 12; ++c) ASSERT_TRUE(a.Accumulate(r.weights[c], Dense(r.deltas[c])).ok());
  FedAvg half;
  ASSERT_TRUE(half.BeginRound(r.global).ok());
  for (size_t c = 0; c < 6; ++c)
    ASSERT_TRUE(half.Accumulate(r.weights[c], Dense(r.deltas[c])).ok());
  for (size_t c = 6; c < 12; ++c) ASSERT_TRUE(b.Accumulate(r.weights[c], Dense(r.deltas[c])).ok());
  ASSERT_TRUE(b.MergePartialSum(*half.partial_sum()).ok());
  EXPECT_EQ(a.Finalize()->content_hash(), b.Finalize()->content_hash());
}

TEST(PartialSumTest, TheWireFormRoundTripsNarrowAndWideSums) {
  PartialSum p = PartialSum::Zero(4);
  p.count = 3;
  p.total_weight = 3 * k2To30;
  std::vector<FixedPoint> values = {Units(1.5), Units(-2.25), 0, -1};
  p.sum.Assign(values);
  Result<std::vector<uint8_t>> narrow = EncodePartialSum(p);
  ASSERT_TRUE(narrow.ok()) << narrow.status();
  Result<PartialSum> back = DecodePartialSum(*narrow, 4);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(*back == p);
  // Past an int64 (2^40 updates may sum to that): the high limbs travel too.
  p.count = uint64_t{1} << 40;
  p.total_weight = uint64_t{1} << 41;
  values[0] = (static_cast<FixedPoint>(1) << 100) + 12345;
  values[3] = -(static_cast<FixedPoint>(1) << 90) - 7;
  p.sum.Assign(values);
  Result<std::vector<uint8_t>> wide = EncodePartialSum(p);
  ASSERT_TRUE(wide.ok()) << wide.status();
  EXPECT_EQ(wide->size(), narrow->size() + 4 * 8);  // one high limb per value
  back = DecodePartialSum(*wide, 4);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(*back == p);
}

TEST(PartialSumTest, AMalformedPartialSumIsRefusedNamingWhatIsWrong) {
  PartialSum p = PartialSum::Zero(3);
  p.count = 2;
  p.total_weight = 10;
  p.sum.Assign(std::vector<FixedPoint>{Units(1.0), Units(2.0), Units(3.0)});
  const std::vector<uint8_t> good = *EncodePartialSum(p);
  ASSERT_TRUE(DecodePartialSum(good, 3).ok());

  auto refused = [](Result<PartialSum> r, const std::string& what) {
    ASSERT_FALSE(r.ok()) << what;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(what), std::string::npos) << r.status();
  };
  refused(DecodePartialSum(good, 4), "3 values, the model has 4");
  refused(DecodePartialSum(std::span(good).first(good.size() - 1), 3), "truncated");
  std::vector<uint8_t> longer = good;
  longer.push_back(0);
  refused(DecodePartialSum(longer, 3), "trailing");
  std::vector<uint8_t> version = good;
  version[0] = 2;
  refused(DecodePartialSum(version, 3), "version 2");
  // A size tag of 2^60 is refused before anything is allocated.
  std::vector<uint8_t> huge = good;
  const uint64_t tag = uint64_t{1} << 60;
  std::memcpy(huge.data() + 4 + 8 + 8, &tag, 8);
  refused(DecodePartialSum(huge, 3), "partial_sum.low");

  PartialSum bad = p;
  bad.count = 11;  // more updates than weight
  refused(DecodePartialSum(*EncodePartialSum(bad), 3), "total weight of 10");
  bad = p;
  // More than two terms below 2^62 can sum to.
  bad.sum.Assign(std::vector<FixedPoint>{Units(1.0), static_cast<FixedPoint>(3) << 62, 0});
  refused(DecodePartialSum(*EncodePartialSum(bad), 3), "value 1");
  bad = PartialSum::Zero(3);
  bad.sum.Assign(std::vector<FixedPoint>{0, 0, 1});  // an empty sum is zero
  refused(DecodePartialSum(*EncodePartialSum(bad), 3), "value 2");
  bad = p;
  bad.total_weight = PartialSum::kMaxTotalWeight + 1;
  refused(DecodePartialSum(*EncodePartialSum(bad), 3), "past 2^53");

  FedAvg avg;
  ASSERT_TRUE(avg.BeginRound(FlatModel(4)).ok());
  Status s = avg.MergePartialSum(p);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("fedavg"), std::string::npos) << s;
}

}  // namespace
}  // namespace tributary
