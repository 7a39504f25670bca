#include "train/data/partition.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <numeric>
#include <vector>

#include "core/rng.h"
#include "tests/core/log_capture.h"
#include "tests/core/progress_lines.h"

namespace tributary {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

// n labels, n / num_classes of each class, in random order (like a shuffled data set).
std::vector<uint8_t> BalancedLabels(size_t n, int num_classes, uint64_t seed = 5) {
  std::vector<uint8_t> labels(n);
  for (size_t i = 0; i < n; ++i) labels[i] = static_cast<uint8_t>(i % num_classes);
  Rng rng(seed);
  rng.Shuffle(std::span<uint8_t>(labels));
  return labels;
}

Partition MustPartition(std::string_view spec, const std::vector<uint8_t>& labels, int clients,
                        uint64_t seed) {
  Result<Partition> p = MakePartition(spec, labels, 10, clients, seed);
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? *p : Partition{};
}

class PartitionKindsTest : public ::testing::TestWithParam<const char*> {};

TEST_P(PartitionKindsTest, CoversEverySampleOnceAndIsDeterministic) {
  const auto labels = BalancedLabels(10000, 10);
  const Partition p = MustPartition(GetParam(), labels, 20, 42);
  ASSERT_EQ(p.size(), 20u);
  EXPECT_TRUE(ValidatePartition(p, labels.size(), /*require_complete=*/true).ok());
  size_t total = 0;
  for (const auto& client : p) {
    total += client.size();
    EXPECT_TRUE(std::is_sorted(client.begin(), client.end()));
    EXPECT_GE(client.size(), 1u);
  }
  EXPECT_EQ(total, labels.size());

  EXPECT_EQ(MustPartition(GetParam(), labels, 20, 42), p);
  EXPECT_NE(MustPartition(GetParam(), labels, 20, 43), p);
}

INSTANTIATE_TEST_SUITE_P(AllKinds, PartitionKindsTest,
                         ::testing::Values("iid", "dirichlet:0.1", "dirichlet:0.5", "dirichlet:100",
                                           "shards:2", "shards:5", "labels:1", "labels:2",
                                           "labels:3", "quantity:0.5", "quantity:5"));

TEST(PartitionTest, IidIsBalancedAndUnskewed) {
  const auto labels = BalancedLabels(10007, 10);
  const Partition p = MustPartition("iid", labels, 10, 1);
  const PartitionStats st = ComputePartitionStats(p, labels, 10);
  EXPECT_EQ(st.min_size, 1000);  // 10007 = 10 * 1000 + 7
  EXPECT_EQ(st.max_size, 1001);
  EXPECT_EQ(st.total, 10007);
  EXPECT_LT(st.mean_label_tv, 0.05);
  EXPECT_LT(st.max_label_tv, 0.1);
  EXPECT_EQ(st.min_classes, 10);
}

TEST(PartitionTest, DirichletSkewFollowsAlpha) {
  const auto labels = BalancedLabels(10000, 10);
  const auto skew = [&](const char* spec) {
    return ComputePartitionStats(MustPartition(spec, labels, 20, 7), labels, 10);
  };
  const PartitionStats low = skew("dirichlet:0.1");
  const PartitionStats mid = skew("dirichlet:1");
  const PartitionStats high = skew("dirichlet:100");
  // Measured mean TV over 20 clients (seed 7): 0.726, 0.346, 0.036.
  EXPECT_GT(low.mean_label_tv, 0.6);
  EXPECT_LT(high.mean_label_tv, 0.1);
  EXPECT_GT(low.mean_label_tv, mid.mean_label_tv);
  EXPECT_GT(mid.mean_label_tv, high.mean_label_tv);
  EXPECT_LT(low.mean_classes, 5.0);
  EXPECT_EQ(high.min_classes, 10);
  EXPECT_GE(low.min_size, 1);
}

TEST(PartitionTest, DirichletHonoursMinSize) {
  const auto labels = BalancedLabels(2000, 10);
  // alpha 0.05 over 50 clients leaves many clients tiny; min_size 30 needs the fix-up.
  Result<Partition> p = MakePartition("dirichlet:0.05,min_size=30", labels, 10, 50, 3);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE(ValidatePartition(*p, labels.size(), true).ok());
  const PartitionStats st = ComputePartitionStats(*p, labels, 10);
  EXPECT_GE(st.min_size, 30);
  EXPECT_EQ(st.total, 2000);
  EXPECT_GT(st.mean_label_tv, 0.5);  // still strongly skewed
  // min_size=0 may leave clients empty; the stats count them.
  p = MakePartition("dirichlet:0.05,min_size=0", labels, 10, 50, 3);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_GT(ComputePartitionStats(*p, labels, 10).empty_clients, 0);
  // Impossible: 50 clients x 41 > 2000 samples.
  p = MakePartition("dirichlet:0.5,min_size=41", labels, 10, 50, 3);
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(p.status().message(), HasSubstr("min_size 41 is impossible"));
}

TEST(PartitionTest, ShardsGiveEachClientAtMostKClasses) {
  const auto labels = BalancedLabels(10000, 10);
  // 20 clients x 2 shards of 250: shards never straddle a class boundary.
  const Partition p = MustPartition("shards:2", labels, 20, 9);
  const PartitionStats st = ComputePartitionStats(p, labels, 10);
  EXPECT_EQ(st.min_size, 500);
  EXPECT_EQ(st.max_size, 500);
  EXPECT_LE(st.max_classes, 2);
  EXPECT_GE(st.min_classes, 1);
  EXPECT_GT(st.mean_label_tv, 0.75);  // 2 of 10 classes: TV >= 0.8 per client
  // 1 shard per client: exactly one class each.
  const PartitionStats one =
      ComputePartitionStats(MustPartition("shards:1", labels, 20, 9), labels, 10);
  EXPECT_EQ(one.max_classes, 1);
  EXPECT_NEAR(one.mean_label_tv, 0.9, 1e-9);
}

// NIID-Bench's #C = K: every client holds exactly K labels (label i mod 10 among them), and each
// label's samples are split among its holders in parts that differ by at most one.
TEST(PartitionTest, LabelsGiveEveryClientExactlyKLabelsSplitEvenlyAmongHolders) {
  const auto labels = BalancedLabels(10000, 10);
  for (int k : {1, 2, 3, 10}) {
    SCOPED_TRACE(k);
    const Partition p = MustPartition(fmt::format("labels:{}", k), labels, 13, 4);
    const PartitionStats st = ComputePartitionStats(p, labels, 10);
    EXPECT_EQ(st.min_classes, k);
    EXPECT_EQ(st.max_classes, k);
    EXPECT_EQ(st.total, 10000);
    for (int c = 0; c < 10; ++c) {
      int64_t lo = std::numeric_limits<int64_t>::max(), hi = 0, sum = 0;
      for (int i = 0; i < 13; ++i) {
        if (i % 10 == c) {
          EXPECT_GT(st.class_counts[i][c], 0) << "client " << i;
        }
        if (st.class_counts[i][c] == 0) continue;
        lo = std::min(lo, st.class_counts[i][c]);
        hi = std::max(hi, st.class_counts[i][c]);
        sum += st.class_counts[i][c];
      }
      EXPECT_EQ(sum, 1000) << "class " << c;
      EXPECT_LE(hi - lo, 1) << "class " << c;
    }
  }
  // labels:1 with 10 clients: client i holds all 1,000 samples of class i, nothing else.
  const PartitionStats one =
      ComputePartitionStats(MustPartition("labels:1", labels, 10, 4), labels, 10);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(one.class_counts[i][i], 1000) << "client " << i;
  // labels:2 is not shards:2: with shards some clients can hold a single class.
  const PartitionStats shards =
      ComputePartitionStats(MustPartition("shards:2", labels, 50, 4), labels, 10);
  const PartitionStats two =
      ComputePartitionStats(MustPartition("labels:2", labels, 50, 4), labels, 10);
  EXPECT_EQ(shards.min_classes, 1);  // 100 shards of 100: some client gets two of one class
  EXPECT_EQ(two.min_classes, 2);
}

TEST(PartitionTest, LabelsRefuseAClassNoClientHolds) {
  const auto labels = BalancedLabels(1000, 10);
  // 3 clients x 1 label hold classes 0, 1, 2: class 3 would be dropped.
  Result<Partition> p = MakePartition("labels:1", labels, 10, 3, 1);
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(p.status().message(), AllOf(HasSubstr("'labels:1'"),
                                          HasSubstr("label 3 (100 samples) is held by no client"),
                                          HasSubstr("3 clients x 1 labels")));
  // 5 clients x 10 labels hold everything.
  EXPECT_TRUE(MakePartition("labels:10", labels, 10, 5, 1).ok());
  p = MakePartition("labels:11", labels, 10, 5, 1);
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(p.status().message(), HasSubstr("labels per client must be in 1..10"));
}

// Quantity skew: client fractions are a Dirichlet(beta) draw, whose variance is
// (N - 1) / (N^2 (N beta + 1)); labels stay IID.
TEST(PartitionTest, QuantitySizesFollowTheDirichletDrawWithIidLabels) {
  const auto labels = BalancedLabels(20000, 10);
  constexpr int kClients = 10;
  for (double beta : {0.5, 5.0}) {
    SCOPED_TRACE(beta);
    double sum = 0, sum_sq = 0;
    int n = 0;
    for (uint64_t seed = 1; seed <= 150; ++seed) {
      const PartitionStats st = ComputePartitionStats(
          MustPartition(fmt::format("quantity:{},min_size=0", beta), labels, kClients, seed),
          labels, 10);
      ASSERT_EQ(st.total, 20000);
      for (int64_t size : st.sizes) {
        const double f = static_cast<double>(size) / 20000.0;
        sum += f;
        sum_sq += f * f;
        ++n;
      }
      // Clients of 1,000 samples or more hold close to the global label mix.
      for (int i = 0; i < kClients; ++i)
        if (st.sizes[i] >= 1000) {
          EXPECT_LT(st.label_tv[i], 0.1) << "seed " << seed;
        }
    }
    const double mean = sum / n, var = sum_sq / n - mean * mean;
    const double expected = (kClients - 1.0) / (kClients * kClients * (kClients * beta + 1));
    EXPECT_NEAR(mean, 0.1, 1e-12);
    // 1,500 fractions: the sample variance is within 15% (beta 0.5: 0.0150, 5: 0.00176).
    EXPECT_NEAR(var, expected, 0.15 * expected);
  }
  // min_size is honoured even when no draw gives it.
  const Partition p = MustPartition("quantity:0.05,min_size=100", labels, 50, 3);
  EXPECT_GE(ComputePartitionStats(p, labels, 10).min_size, 100);
  EXPECT_TRUE(ValidatePartition(p, labels.size(), true).ok());
}

TEST(PartitionTest, BadSpecsAreRejectedWithReasons) {
  const auto labels = BalancedLabels(1000, 10);
  const auto error = [&](std::string_view spec, int clients = 10) {
    Result<Partition> p = MakePartition(spec, labels, 10, clients, 1);
    EXPECT_FALSE(p.ok()) << spec;
    if (p.ok()) return std::string();
    EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument) << spec;
    return p.status().message();
  };
  EXPECT_THAT(error("random"), AllOf(HasSubstr("'random'"), HasSubstr("unknown kind")));
  EXPECT_THAT(error("iid:3"), HasSubstr("iid takes no parameter"));
  EXPECT_THAT(error("dirichlet"), HasSubstr("expected dirichlet:ALPHA"));
  EXPECT_THAT(error("dirichlet:abc"), HasSubstr("expected dirichlet:ALPHA"));
  EXPECT_THAT(error("dirichlet:0"), HasSubstr("alpha must be a finite number > 0, got 0"));
  EXPECT_THAT(error("dirichlet:-1"), HasSubstr("alpha must be a finite number > 0, got -1"));
  EXPECT_THAT(error("dirichlet:inf"), HasSubstr("with a finite number ALPHA"));
  EXPECT_THAT(error("dirichlet:0.5,min=3"), HasSubstr("min_size=N"));
  EXPECT_THAT(error("shards:0"), HasSubstr("expected shards:K"));
  EXPECT_THAT(error("shards:2.5"), HasSubstr("expected shards:K"));
  EXPECT_THAT(error("shards:3"), AllOf(HasSubstr("1000 samples do not divide"),
                                       HasSubstr("10 clients x 3 shards = 30")));
  EXPECT_THAT(error("labels"), HasSubstr("expected labels:K"));
  EXPECT_THAT(error("labels:0"), HasSubstr("expected labels:K"));
  EXPECT_THAT(error("quantity"), HasSubstr("expected quantity:BETA"));
  EXPECT_THAT(error("quantity:0"), HasSubstr("beta must be a finite number > 0, got 0"));
  EXPECT_THAT(error("quantity:1,min=2"), HasSubstr("the only quantity option is min_size=N"));
  EXPECT_THAT(error("quantity:1,min_size=101"), HasSubstr("min_size 101 is impossible"));
  EXPECT_THAT(error("iid", 1001), HasSubstr("more clients (1001) than samples (1000)"));
  EXPECT_THAT(error("dirichlet:0.5", 0), HasSubstr("num_clients must be >= 1"));
  std::vector<uint8_t> bad_labels = labels;
  bad_labels[17] = 10;
  Result<Partition> p = MakePartition("iid", bad_labels, 10, 5, 1);
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(p.status().message(), HasSubstr("label 10 of sample 17 is not < num_classes 10"));
}

TEST(PartitionTest, ValidateFindsDuplicatesAndGaps) {
  EXPECT_TRUE(ValidatePartition({{0, 2}, {1}}, 3, true).ok());
  Status s = ValidatePartition({{0, 2}, {2}}, 3, false);
  EXPECT_THAT(s.message(), HasSubstr("sample 2 is assigned twice (client 0 and client 1)"));
  s = ValidatePartition({{0}, {3}}, 3, false);
  EXPECT_THAT(s.message(), HasSubstr("client 1 holds index 3, not < 3"));
  EXPECT_TRUE(ValidatePartition({{0}, {2}}, 3, false).ok());
  s = ValidatePartition({{0}, {2}}, 3, true);
  EXPECT_THAT(s.message(), HasSubstr("sample 1 is assigned to no client"));
}

TEST(PartitionTest, StatsAndSummary) {
  // Global mix: 4 of class 0, 4 of class 1. Client 0 is all class 0 (TV 0.5); client 1 matches.
  const std::vector<uint8_t> labels = {0, 0, 0, 1, 1, 1, 0, 1};
  const Partition p = {{0, 1, 2}, {6, 7}, {3, 4, 5}, {}};
  const PartitionStats st = ComputePartitionStats(p, labels, 3);
  EXPECT_EQ(st.sizes, (std::vector<int64_t>{3, 2, 3, 0}));
  EXPECT_EQ(st.class_counts[1], (std::vector<int64_t>{1, 1, 0}));
  EXPECT_DOUBLE_EQ(st.label_tv[0], 0.5);
  EXPECT_DOUBLE_EQ(st.label_tv[1], 0.0);
  EXPECT_DOUBLE_EQ(st.mean_label_tv, 1.0 / 3.0);
  EXPECT_DOUBLE_EQ(st.max_label_tv, 0.5);
  EXPECT_EQ(st.empty_clients, 1);
  EXPECT_EQ(st.min_size, 0);
  EXPECT_DOUBLE_EQ(st.mean_size, 2.0);
  EXPECT_EQ(st.min_classes, 1);
  EXPECT_EQ(st.max_classes, 2);

  const std::string summary = FormatPartitionStats(st);
  EXPECT_EQ(std::count(summary.begin(), summary.end(), '\n'), 3);
  EXPECT_THAT(summary, AllOf(HasSubstr("4 clients, 8 samples, 3 classes"),
                             HasSubstr("min 0 / mean 2.0 / max 3 (1 empty)"),
                             HasSubstr("mean TV to global 0.333 (max 0.500)")));
  const std::string listed = FormatPartitionStats(st, 2);
  EXPECT_THAT(listed, AllOf(HasSubstr("client 1: 2 samples, TV 0.000, per class [1 1 0]"),
                            HasSubstr("... 2 more clients")));
  EXPECT_EQ(std::count(listed.begin(), listed.end(), '\n'), 6);
}

// A Dirichlet partition reports its progress over the draws (forced to log on every draw here; a
// real one logs only past a second): min_size 30 is out of reach, so all 100 draws run.
TEST(PartitionTest, DirichletReportsItsProgressOverTheDraws) {
  const auto labels = BalancedLabels(2000, 10);
  testing::LogCapture log(LogLevel::kInfo);
  ASSERT_TRUE(MakePartition("dirichlet:0.05,min_size=30", labels, 10, 50, 3).ok());
  EXPECT_EQ(log.lines(), std::vector<std::string>{}) << "quick: quiet";
  testing::ForceProgressLines every_draw;
  ASSERT_TRUE(MakePartition("dirichlet:0.05,min_size=30", labels, 10, 50, 3).ok());
  const std::vector<std::string> lines = log.lines();
  ASSERT_EQ(lines.size(), 101u);
  const std::string prefix =
      "info|partitioning 2000 examples among 50 clients (dirichlet, alpha 0.05)";
  EXPECT_EQ(lines[0].rfind(prefix + ": 1/100 draws (1%), ", 0), 0u) << lines[0];
  EXPECT_EQ(lines[49].rfind(prefix + ": 50/100 draws (50%), ", 0), 0u) << lines[49];
  EXPECT_EQ(lines[99].rfind(prefix + ": 100/100 draws (100%), ", 0), 0u) << lines[99];
  EXPECT_EQ(lines[100].rfind(prefix + " done: 100 draws in ", 0), 0u) << lines[100];
  // A draw that meets min_size at once ends it: one draw.
  testing::LogCapture first(LogLevel::kInfo);
  ASSERT_TRUE(MakePartition("dirichlet:100", labels, 10, 5, 3).ok());
  ASSERT_EQ(first.lines().size(), 2u);
  EXPECT_EQ(first.lines()[1].rfind(
                "info|partitioning 2000 examples among 5 clients (dirichlet, alpha 100) done: 1 "
                "draws in ",
                0),
            0u)
      << first.lines()[1];
}

}  // namespace
}  // namespace tributary
