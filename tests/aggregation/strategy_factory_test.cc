// Spec strings: every rule builds, invalid specs are refused with messages that name the spec,
// the key and the allowed range; the clip stage; FedProx's mu.
#include "aggregation/strategy_factory.h"

#include <gtest/gtest.h>

#include "aggregation/norm_clip.h"
#include "aggregation/strategy_spec.h"
#include "tests/aggregation/test_util.h"

namespace tributary {
namespace {

using testing::Dense;
using testing::FlatModel;

TEST(StrategySpecTest, ParsesStagesKeysAndNumbers) {
  auto st = *ParseStrategySpec(" clip( norm = 5 ) + fedadam(server_lr=0.01, tau=1e+3,beta1=.5) ");
  ASSERT_EQ(st.size(), 2u);
  EXPECT_EQ(st[0].name, "clip");
  ASSERT_EQ(st[0].params.size(), 1u);
  EXPECT_EQ(st[0].params[0].first, "norm");
  EXPECT_EQ(st[0].params[0].second, 5.0);
  EXPECT_EQ(st[1].name, "fedadam");
  ASSERT_EQ(st[1].params.size(), 3u);
  EXPECT_EQ(st[1].params[1].second, 1000.0);
  EXPECT_EQ(st[1].params[2].second, 0.5);
  EXPECT_TRUE(ParseStrategySpec("median()")->at(0).params.empty());
}

TEST(StrategySpecTest, RejectsMalformedSpecs) {
  struct Case {
    const char* spec;
    const char* message;
  };
  for (const Case& c :
       {Case{"", "empty stage"}, Case{"krum(f=2", "missing ')'"},
        Case{"krum(f=2)x", "unexpected text 'x' after ')'"},
        Case{"krum(f)", "'f' of krum is not of the form key=value"},
        Case{"krum(f=two)", "key 'f' of krum has value 'two'"},
        Case{"krum(f=inf)", "not a finite number"},
        Case{"krum(f=1,f=2)", "key 'f' of krum is given twice"}, Case{"krum(f=1,)", "trailing ','"},
        Case{"Krum", "not a rule name"}, Case{"fedavg+", "empty stage"}}) {
    SCOPED_TRACE(c.spec);
    auto r = ParseStrategySpec(c.spec);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(c.message), std::string::npos) << r.status();
    EXPECT_NE(r.status().message().find("strategy '" + std::string(c.spec) + "'"),
              std::string::npos)
        << r.status();
  }
  EXPECT_FALSE(ParseStrategySpec(std::string(2000, 'a')).ok());
}

TEST(StrategyFactoryTest, BuildsEveryRule) {
  struct Case {
    const char* spec;
    const char* name;
  };
  for (const Case& c :
       {Case{"fedavg", "fedavg"}, Case{"fedavg(server_lr=0.5)", "fedavg"},
        Case{"fedprox(mu=0.01)", "fedprox"}, Case{"fedavgm(server_lr=1.0,momentum=0.9)", "fedavgm"},
        Case{"fedadagrad(server_lr=0.1,beta1=0,tau=1e-3)", "fedadagrad"},
        Case{"fedadam(server_lr=0.01,beta1=0.9,beta2=0.99,tau=1e-3)", "fedadam"},
        Case{"fedyogi", "fedyogi"}, Case{"fednova(server_lr=0.5)", "fednova"},
        Case{"scaffold(server_lr=1,clients=10)", "scaffold"}, Case{"median", "median"},
        Case{"trimmed_mean(beta=0.1)", "trimmed_mean"}, Case{"krum(f=2)", "krum"},
        Case{"multikrum(f=2,m=5)", "multikrum"}, Case{"bulyan(f=1)", "bulyan"},
        Case{"clip(norm=5)+median(max_buffer_mb=64,threads=2)", "clip+median"}}) {
    auto s = MakeStrategy(c.spec);
    ASSERT_TRUE(s.ok()) << c.spec << ": " << s.status();
    EXPECT_EQ((*s)->name(), c.name);
  }
  EXPECT_EQ(StrategyNames().size(), 13u);
}

TEST(StrategyFactoryTest, InvalidConfigsNameTheKeyAndRange) {
  struct Case {
    const char* spec;
    const char* message;
  };
  for (const Case& c : {
           Case{"fedsgd", "unknown rule 'fedsgd'; known rules: fedavg, fedprox"},
           Case{"krum(g=2)", "unknown key 'g' for krum; allowed keys: f, max_buffer_mb, threads"},
           Case{"krum", "krum needs key 'f' (an integer in [0, 1e+09])"},
           Case{"krum(f=-1)", "key 'f' of krum must be an integer in [0, 1e+09]; got -1"},
           Case{"krum(f=1.5)", "key 'f' of krum must be an integer"},
           Case{"trimmed_mean(beta=0.5)",
                "key 'beta' of trimmed_mean must be a number in [0, 0.5)"},
           Case{"fedadam(beta2=1)", "key 'beta2' of fedadam must be a number in [0, 1); got 1"},
           Case{"fedadam(tau=0)", "key 'tau' of fedadam must be a number in (0, inf)"},
           Case{"fedadagrad(beta2=0.9)", "unknown key 'beta2' for fedadagrad"},
           Case{"fedavgm(momentum=1)", "key 'momentum' of fedavgm must be a number in [0, 1)"},
           Case{"fedprox", "fedprox needs key 'mu'"},
           Case{"fedprox(mu=-0.1)", "key 'mu' of fedprox must be a number in [0, inf)"},
           Case{"median(max_buffer_mb=0)",
                "key 'max_buffer_mb' of median must be an integer in [1"},
           Case{"median(threads=1000)", "key 'threads' of median must be an integer in [0, 256]"},
           Case{"clip(norm=5)", "needs a rule after it"},
           Case{"clip(norm=0)+fedavg", "key 'norm' of clip must be a number in (0, inf)"},
           Case{"clip(max=1)+fedavg", "unknown key 'max' for clip; allowed keys: norm"},
           Case{"clip()+fedavg", "clip needs key 'norm' (a number in (0, inf))"},
           Case{"clip(norm=1,x=2)+fedavg", "unknown key 'x' for clip; allowed keys: norm"},
           Case{"median+fedavg", "only one pre-aggregation stage, clip(norm=C)"},
           Case{"clip(norm=1)+clip(norm=2)+fedavg", "only one pre-aggregation stage"},
       }) {
    SCOPED_TRACE(c.spec);
    auto s = MakeStrategy(c.spec);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.status().message().find(c.message), std::string::npos) << s.status();
    EXPECT_NE(s.status().message().find("strategy '" + std::string(c.spec) + "'"),
              std::string::npos)
        << s.status();
  }
  StrategyOptions bad;
  bad.server_lr = 0.0f;
  EXPECT_EQ(MakeStrategy("fedavg", bad).status().code(), StatusCode::kInvalidArgument);
}

TEST(StrategyFactoryTest, ServerLrOptionIsTheDefaultOfFedAvgOnly) {
  StrategyOptions o;
  o.server_lr = 0.5f;
  std::vector<float> d = {2.0f};
  auto step = [&](const char* spec) {
    auto s = *MakeStrategy(spec, o);
    EXPECT_TRUE(s->BeginRound(FlatModel(1)).ok());
    EXPECT_TRUE(s->Accumulate(1, Dense(d)).ok());
    return s->Finalize()->data()[0];
  };
  EXPECT_FLOAT_EQ(step("fedavg"), 1.0f);               // 0.5 * 2
  EXPECT_FLOAT_EQ(step("fedavg(server_lr=2)"), 4.0f);  // the spec wins
  EXPECT_FLOAT_EQ(step("fedavgm(momentum=0)"), 1.0f);
  // fedadam keeps its own default (0.01): m = 0.2, v = 0.01 * 4 (+ tiny), step ~ 0.01 * 0.2 / 0.2.
  EXPECT_NEAR(step("fedadam"), 0.01f, 1e-4);
}

TEST(StrategyFactoryTest, FedProxAggregatesLikeFedAvgAndExposesMu) {
  auto prox = *MakeStrategy("fedprox(mu=0.25)");
  EXPECT_FLOAT_EQ(prox->client_proximal_mu(), 0.25f);
  EXPECT_FLOAT_EQ((*MakeStrategy("fedavg"))->client_proximal_mu(), 0.0f);
  EXPECT_FLOAT_EQ((*MakeStrategy("clip(norm=1)+fedprox(mu=0.5)"))->client_proximal_mu(), 0.5f);
  std::vector<float> a = {1.0f, 0.0f}, b = {0.0f, 3.0f};
  ASSERT_TRUE(prox->BeginRound(FlatModel(2)).ok());
  ASSERT_TRUE(prox->Accumulate(1, Dense(a)).ok());
  ASSERT_TRUE(prox->Accumulate(3, Dense(b)).ok());
  ModelWeights next = *prox->Finalize();
  EXPECT_FLOAT_EQ(next.data()[0], 0.25f);
  EXPECT_FLOAT_EQ(next.data()[1], 2.25f);
}

TEST(NormClipTest, ClipsLargeUpdatesBeforeTheRule) {
  auto s = *MakeStrategy("clip(norm=1)+fedavg");
  const auto* clip = dynamic_cast<const NormClip*>(s.get());
  ASSERT_NE(clip, nullptr);
  // [3, 4] has norm 5 -> [0.6, 0.8]; [0.3, 0.4] has norm 0.5 and passes unchanged.
  std::vector<float> big = {3.0f, 4.0f}, small = {0.3f, 0.4f};
  EXPECT_EQ(s->Accumulate(1, Dense(big)).code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(s->BeginRound(FlatModel(2)).ok());
  ASSERT_TRUE(s->Accumulate(1, Dense(big)).ok());
  ASSERT_TRUE(s->Accumulate(3, Dense(small)).ok());
  EXPECT_EQ(clip->num_clipped(), 1u);
  EXPECT_EQ(s->num_accumulated(), 2u);
  ModelWeights next = *s->Finalize();
  EXPECT_NEAR(next.data()[0], (0.6 + 3 * 0.3) / 4, 1e-6);
  EXPECT_NEAR(next.data()[1], (0.8 + 3 * 0.4) / 4, 1e-6);
}

TEST(NormClipTest, WorksInFrontOfRobustRulesAndKeepsState) {
  auto s = *MakeStrategy("clip(norm=2)+median");
  std::vector<float> a = {30.0f, 40.0f}, b = {0.0f, 1.0f}, c = {1.0f, 0.0f};
  ASSERT_TRUE(s->BeginRound(FlatModel(2)).ok());
  for (auto* u : {&a, &b, &c}) ASSERT_TRUE(s->Accumulate(5, Dense(*u)).ok());
  ModelWeights next = *s->Finalize();
  // Columns after clipping: {1.2, 0, 1} and {1.6, 1, 0}.
  EXPECT_FLOAT_EQ(next.data()[0], 1.0f);
  EXPECT_FLOAT_EQ(next.data()[1], 1.0f);
  // The wrapped optimizer's state passes through.
  auto adam = *MakeStrategy("clip(norm=2)+fedadam");
  ASSERT_TRUE(adam->BeginRound(FlatModel(2)).ok());
  ASSERT_TRUE(adam->Accumulate(1, Dense(a)).ok());
  ASSERT_TRUE(adam->Finalize().ok());
  ModelWeights st = *adam->SaveState();
  EXPECT_NEAR(st.data()[st.find("m")->offset + 1], 0.1 * 1.6, 1e-6);  // m = (1 - beta1) * clipped
  EXPECT_TRUE(adam->LoadState(st, 2).ok());
  EXPECT_FALSE(adam->LoadState(st, 3).ok()) << "the size check passes through the clip stage";
}

}  // namespace
}  // namespace tributary
