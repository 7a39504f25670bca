// The robust rules against straightforward float64 reference implementations on random data, and
// their robustness to Byzantine updates of magnitude 1e6.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <tuple>

#include "aggregation/bulyan.h"
#include "aggregation/coordinate_wise.h"
#include "aggregation/krum.h"
#include "aggregation/strategy_factory.h"
#include "core/rng.h"
#include "tests/aggregation/test_util.h"

namespace tributary {
namespace {

using testing::Dense;
using testing::FlatModel;
using testing::Sparse;
using Updates = std::vector<std::vector<float>>;

// d = 3001 covers partial coordinate blocks (64) and a partial distance panel (2048).
constexpr size_t kDim = 3001;

Updates RandomUpdates(size_t n, size_t dim, uint64_t seed) {
  Rng rng(seed);
  Updates u(n, std::vector<float>(dim));
  for (auto& v : u)
    for (float& f : v) f = static_cast<float>(rng.Normal());
  return u;
}

// ---- float64 references ------------------------------------------------------------------------
std::vector<double> Column(const Updates& u, size_t j, const std::vector<size_t>* rows = nullptr) {
  std::vector<double> c;
  if (rows) {
    for (size_t i : *rows) c.push_back(u[i][j]);
  } else {
    for (const auto& v : u) c.push_back(v[j]);
  }
  std::sort(c.begin(), c.end());
  return c;
}

double RefMedian(const std::vector<double>& sorted) {
  const size_t n = sorted.size();
  return n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
}

double RefTrimmedMean(const std::vector<double>& sorted, size_t k) {
  double s = 0;
  for (size_t i = k; i < sorted.size() - k; ++i) s += sorted[i];
  return s / static_cast<double>(sorted.size() - 2 * k);
}

double RefDist(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (size_t j = 0; j < a.size(); ++j) s += (double(a[j]) - b[j]) * (double(a[j]) - b[j]);
  return s;
}

// Krum scores over `subset`, by sorting each update's distances to the others.
std::vector<double> RefScores(const Updates& u, const std::vector<size_t>& subset, size_t f) {
  std::vector<double> scores;
  const size_t k = subset.size() >= f + 2 ? subset.size() - f - 2 : 0;
  for (size_t a : subset) {
    std::vector<double> d;
    for (size_t b : subset)
      if (b != a) d.push_back(RefDist(u[a], u[b]));
    std::sort(d.begin(), d.end());
    scores.push_back(std::accumulate(d.begin(), d.begin() + static_cast<ptrdiff_t>(k), 0.0));
  }
  return scores;
}

std::vector<size_t> RefMultiKrumSelection(const Updates& u, size_t f, size_t m) {
  std::vector<size_t> all(u.size());
  std::iota(all.begin(), all.end(), size_t{0});
  std::vector<double> s = RefScores(u, all, f);
  std::stable_sort(all.begin(), all.end(), [&](size_t a, size_t b) { return s[a] < s[b]; });
  all.resize(m);
  return all;
}

std::vector<size_t> RefBulyanSelection(const Updates& u, size_t f) {
  std::vector<size_t> left(u.size()), chosen;
  std::iota(left.begin(), left.end(), size_t{0});
  while (chosen.size() < u.size() - 2 * f) {
    std::vector<double> s = RefScores(u, left, f);
    const size_t best = static_cast<size_t>(std::min_element(s.begin(), s.end()) - s.begin());
    chosen.push_back(left[best]);
    left.erase(left.begin() + static_cast<ptrdiff_t>(best));
  }
  return chosen;
}

double RefBulyanCoordinate(const std::vector<double>& sorted, size_t beta) {
  const double med = RefMedian(sorted);
  std::vector<double> by_dist = sorted;
  std::stable_sort(by_dist.begin(), by_dist.end(),
                   [&](double a, double b) { return std::abs(a - med) < std::abs(b - med); });
  return std::accumulate(by_dist.begin(), by_dist.begin() + static_cast<ptrdiff_t>(beta), 0.0) /
         static_cast<double>(beta);
}

// ---- helpers ---------------------------------------------------------------------------------
ModelWeights Aggregate(Strategy& s, const Updates& u, bool sparse = false) {
  const ModelWeights global = FlatModel(u[0].size());
  EXPECT_TRUE(s.BeginRound(global).ok());
  for (size_t i = 0; i < u.size(); ++i) {
    // Weights vary wildly: the robust rules must ignore them.
    Status st = s.Accumulate(1.0 + 1000.0 * static_cast<double>(i % 3),
                             sparse ? Sparse(u[i]) : Dense(u[i]));
    EXPECT_TRUE(st.ok()) << st;
  }
  Result<ModelWeights> out = s.Finalize();
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? *out : global;
}

std::unique_ptr<Strategy> Make(const std::string& spec) {
  auto s = MakeStrategy(spec);
  EXPECT_TRUE(s.ok()) << s.status();
  return std::move(*s);
}

// ---- against the references --------------------------------------------------------------------
TEST(RobustRulesTest, MedianMatchesReferenceOddAndEven) {
  for (size_t n : {15u, 16u}) {
    SCOPED_TRACE(n);
    Updates u = RandomUpdates(n, kDim, 100 + n);
    ModelWeights out = Aggregate(*Make("median"), u);
    double worst = 0;
    for (size_t j = 0; j < kDim; ++j)
      worst = std::max(worst, std::abs(out.data()[j] - RefMedian(Column(u, j))));
    EXPECT_LT(worst, 5e-7);  // odd: exact; even: one float rounding of the midpoint
  }
}

TEST(RobustRulesTest, TrimmedMeanMatchesReference) {
  Updates u = RandomUpdates(15, kDim, 7);
  ModelWeights out = Aggregate(*Make("trimmed_mean(beta=0.2)"), u);  // k = floor(0.2*15) = 3
  double worst = 0;
  for (size_t j = 0; j < kDim; ++j)
    worst = std::max(worst, std::abs(out.data()[j] - RefTrimmedMean(Column(u, j), 3)));
  EXPECT_LT(worst, 5e-7);  // float rounding of a double mean
  for (auto [beta, n, k] : {std::tuple{0.3, 10, 3}, {0.1, 30, 3}, {0.49, 9, 4}, {0.2, 4, 0}}) {
    auto tm = CoordinateWise::TrimmedMean(beta, RobustOptions{});
    EXPECT_EQ(tm->TrimCount(n), k) << beta << " * " << n;
  }
  // beta = 0 is the plain mean.
  ModelWeights mean = Aggregate(*Make("trimmed_mean(beta=0)"), u);
  EXPECT_NEAR(mean.data()[5], RefTrimmedMean(Column(u, 5), 0), 5e-7);
}

TEST(RobustRulesTest, KrumPicksTheReferenceUpdateExactly) {
  Updates u = RandomUpdates(15, kDim, 11);
  // Make the selection unambiguous: a few updates sit close together.
  for (size_t i : {4u, 9u, 12u})
    for (size_t j = 0; j < kDim; ++j) u[i][j] = u[4][j] * 0.2f + u[i][j] * 0.1f;
  Krum krum(3, 1, RobustOptions{});
  ModelWeights out = Aggregate(krum, u);
  const std::vector<size_t> ref = RefMultiKrumSelection(u, 3, 1);
  ASSERT_EQ(krum.selected(), ref);
  for (size_t j = 0; j < kDim; ++j) ASSERT_EQ(out.data()[j], u[ref[0]][j]) << j;
}

TEST(RobustRulesTest, MultiKrumMatchesReference) {
  Updates u = RandomUpdates(15, kDim, 12);
  for (int m : {5, 0}) {  // 0: n - f
    SCOPED_TRACE(m);
    Krum mk(3, m, RobustOptions{});
    ModelWeights out = Aggregate(mk, u);
    const std::vector<size_t> ref = RefMultiKrumSelection(u, 3, m ? 5 : 12);
    ASSERT_EQ(mk.selected(), ref);
    double worst = 0;
    for (size_t j = 0; j < kDim; ++j) {
      double mean = 0;
      for (size_t i : ref) mean += u[i][j];
      worst = std::max(worst, std::abs(out.data()[j] - mean / static_cast<double>(ref.size())));
    }
    EXPECT_LT(worst, 5e-7);
  }
}

TEST(RobustRulesTest, BulyanMatchesReference) {
  Updates u = RandomUpdates(15, kDim, 13);  // f = 2: theta = 11, beta = 7
  Bulyan b(2, RobustOptions{});
  ModelWeights out = Aggregate(b, u);
  const std::vector<size_t> ref = RefBulyanSelection(u, 2);
  ASSERT_EQ(b.selected(), ref);
  double worst = 0;
  for (size_t j = 0; j < kDim; ++j)
    worst = std::max(worst, std::abs(out.data()[j] - RefBulyanCoordinate(Column(u, j, &ref), 7)));
  EXPECT_LT(worst, 5e-7);
}

TEST(RobustRulesTest, ThreadsAndSparseWritersGiveIdenticalResults) {
  Updates u = RandomUpdates(13, kDim, 21);
  for (auto& v : u)
    for (size_t j = 0; j < kDim; j += 3) v[j] = 0.0f;  // sparse-ish
  // "#" stands for the thread count.
  for (std::string rule : {"median(threads=#)", "trimmed_mean(beta=0.1,threads=#)",
                           "multikrum(f=2,m=4,threads=#)", "bulyan(f=2,threads=#)"}) {
    SCOPED_TRACE(rule);
    auto with = [&](char t) {
      std::string s = rule;
      s[s.find('#')] = t;
      return Make(s);
    };
    const uint64_t one = Aggregate(*with('1'), u).content_hash();
    EXPECT_EQ(one, Aggregate(*with('3'), u).content_hash());
    EXPECT_EQ(one, Aggregate(*with('2'), u, /*sparse=*/true).content_hash());
  }
}

// ---- robustness --------------------------------------------------------------------------------
// n = 20 updates, the first f = 4 Byzantine with magnitude 1e6, the rest honest.
Updates WithByzantine(bool colluding, uint64_t seed) {
  Updates u = RandomUpdates(20, 2000, seed);
  Rng rng(seed + 1);
  for (size_t i = 0; i < 4; ++i)
    for (size_t j = 0; j < u[i].size(); ++j)
      u[i][j] = colluding ? 1e6f : (rng.UniformInt(2) ? 1e6f : -1e6f);
  return u;
}

TEST(RobustRulesTest, OutputsStayWithinHonestRangeUnderByzantineUpdates) {
  for (bool colluding : {false, true}) {
    Updates u = WithByzantine(colluding, colluding ? 31 : 32);
    for (const std::string spec :
         {"median", "trimmed_mean(beta=0.2)", "krum(f=4)", "multikrum(f=4)", "bulyan(f=4)"}) {
      SCOPED_TRACE(spec + (colluding ? " colluding" : " random signs"));
      ModelWeights out = Aggregate(*Make(spec), u);
      size_t outside = 0;
      for (size_t j = 0; j < out.size(); ++j) {
        float lo = INFINITY, hi = -INFINITY;
        for (size_t i = 4; i < u.size(); ++i)
          lo = std::min(lo, u[i][j]), hi = std::max(hi, u[i][j]);
        outside += out.data()[j] < lo || out.data()[j] > hi;
      }
      EXPECT_EQ(outside, 0u);
    }
    // Krum returns one honest update exactly.
    Krum krum(4, 1, RobustOptions{});
    ModelWeights k = Aggregate(krum, u);
    ASSERT_EQ(krum.selected().size(), 1u);
    const size_t pick = krum.selected()[0];
    EXPECT_GE(pick, 4u);
    EXPECT_TRUE(std::equal(u[pick].begin(), u[pick].end(), k.data().begin()));
    // FedAvg, for contrast, is dragged far outside.
    auto avg = Make("fedavg");
    std::vector<std::vector<float>> scaled = u;
    for (auto& v : scaled)
      for (float& f : v) f *= 1e-3f;  // keep within the fixed-point range
    ModelWeights a = Aggregate(*avg, scaled);
    EXPECT_GT(std::abs(a.data()[0]), 10.0f);
  }
}

// ---- round sizes, memory -----------------------------------------------------------------------
TEST(RobustRulesTest, TooFewUpdatesFailTheRoundWithoutLosingIt) {
  auto krum = Make("krum(f=2)");  // needs n >= 7
  Updates u = RandomUpdates(7, 50, 41);
  ASSERT_TRUE(krum->BeginRound(FlatModel(50)).ok());
  for (size_t i = 0; i < 5; ++i) ASSERT_TRUE(krum->Accumulate(1, Dense(u[i])).ok());
  Result<ModelWeights> r = krum->Finalize();
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("has 5 updates; the rule needs n > 2f + 2 = 6"),
            std::string::npos)
      << r.status();
  for (size_t i = 5; i < 7; ++i) ASSERT_TRUE(krum->Accumulate(1, Dense(u[i])).ok());
  EXPECT_TRUE(krum->Finalize().ok());
  // A retried round starts empty.
  ASSERT_TRUE(krum->BeginRound(FlatModel(50)).ok());
  EXPECT_EQ(krum->num_accumulated(), 0u);
}

TEST(RobustRulesTest, RoundSizeValidation) {
  struct Case {
    const char* spec;
    int64_t bad, good;
    const char* why;
  };
  for (const Case& c :
       {Case{"krum(f=2)", 6, 7, "n > 2f + 2 = 6"}, Case{"multikrum(f=1,m=8)", 7, 8, "n >= m = 8"},
        Case{"bulyan(f=1)", 6, 7, "n >= 4f + 3 = 7"},
        Case{"clip(norm=1)+bulyan(f=2)", 10, 11, "n >= 4f + 3 = 11"},
        Case{"median", 0, 1, "n >= 1"}}) {
    SCOPED_TRACE(c.spec);
    auto s = Make(c.spec);
    Status bad = ValidateStrategyFor(*s, c.bad);
    EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(bad.message().find(c.why), std::string::npos) << bad;
    EXPECT_NE(bad.message().find("clients_per_round " + std::to_string(c.bad)), std::string::npos)
        << bad;
    EXPECT_TRUE(ValidateStrategyFor(*s, c.good).ok());
  }
  EXPECT_TRUE(ValidateStrategyFor(*Make("fedadam"), 1).ok());
}

TEST(RobustRulesTest, MemoryBoundIsEnforcedBeforeAllocating) {
  // 1 MiB holds two updates of 100,000 floats (400 KB each), not three.
  auto median = Make("median(max_buffer_mb=1)");
  std::vector<float> d(100000, 0.5f);
  ASSERT_TRUE(median->BeginRound(FlatModel(d.size())).ok());
  ASSERT_TRUE(median->Accumulate(1, Dense(d)).ok());
  ASSERT_TRUE(median->Accumulate(1, Dense(d)).ok());
  Status s = median->Accumulate(1, Dense(d));
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(s.message().find("bound of 1048576 bytes"), std::string::npos) << s;
  EXPECT_NE(s.message().find("max_buffer_mb"), std::string::npos) << s;
  EXPECT_EQ(median->num_accumulated(), 2u);
  // The round still aggregates what fit.
  Result<ModelWeights> out = median->Finalize();
  ASSERT_TRUE(out.ok());
  EXPECT_FLOAT_EQ(out->data()[99999], 0.5f);
}

TEST(RobustRulesTest, NonFiniteUpdateIsRefusedAndDropped) {
  auto median = Make("median");
  std::vector<float> good(10, 1.0f), bad(10, 1.0f);
  bad[3] = NAN;
  ASSERT_TRUE(median->BeginRound(FlatModel(10)).ok());
  ASSERT_TRUE(median->Accumulate(1, Dense(good)).ok());
  EXPECT_EQ(median->Accumulate(1, Dense(bad)).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(median->num_accumulated(), 1u);
  EXPECT_FLOAT_EQ(median->Finalize()->data()[3], 1.0f);
}

}  // namespace
}  // namespace tributary
