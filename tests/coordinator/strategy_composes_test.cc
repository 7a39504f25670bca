// Which strategies compose with secure aggregation, differential privacy and asynchronous steps
// (CheckStrategyComposes, both engines' first check): a rule that needs each update takes none
// of them; FedNova, which needs each update's weight, streams asynchronously but cannot take one
// sum; SCAFFOLD, with two sums of different weights, takes none of the three.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "aggregation/fednova.h"
#include "aggregation/strategy_factory.h"
#include "coordinator/async_engine.h"
#include "coordinator/engine_parts.h"
#include "coordinator/round_engine.h"

namespace tributary {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

TEST(StrategyComposesTest, FedNovaRefusesSecureAggregationAndDpButTakesAsynchronousSteps) {
  FedNova nova(LocalSteps{});
  RoundConfig c;
  EXPECT_TRUE(CheckStrategyComposes(nova, c).ok());
  c.secagg.enabled = true;
  Status s = CheckStrategyComposes(nova, c);
  EXPECT_THAT(s.message(), AllOf(HasSubstr("'fednova' cannot be used with secure aggregation"),
                                 HasSubstr("its own local steps")));
  c.secagg.enabled = false;
  c.dp.enabled = true;
  s = CheckStrategyComposes(nova, c);
  EXPECT_THAT(s.message(), HasSubstr("'fednova' cannot be used with differential privacy"));
  c.dp.enabled = false;
  c.max_weight = 100;  // tau_i would come from the capped weight, not the client's examples
  s = CheckStrategyComposes(nova, c);
  EXPECT_THAT(s.message(), HasSubstr("'fednova' cannot be used with run.max_weight = 100"));
  c.max_weight = 0;
  c.mode = "async";
  EXPECT_TRUE(CheckStrategyComposes(nova, c).ok());
  EXPECT_FALSE(nova.Finalize().ok()) << "nothing accumulated";
}

TEST(StrategyComposesTest, TheEnginesRefuseFedNovaWithSecureAggregation) {
  RoundConfig c;
  c.clients_per_round = 3;
  c.secagg.enabled = true;
  ModelWeights model = *ModelWeights::Create({{"w", {4}}});
  Result<std::unique_ptr<RoundEngine>> round =
      RoundEngine::Create(c, std::make_unique<FedNova>(LocalSteps{}), model);
  ASSERT_FALSE(round.ok());
  EXPECT_THAT(round.status().message(), HasSubstr("'fednova' cannot be used with secure"));
  c.secagg.enabled = false;
  EXPECT_TRUE(RoundEngine::Create(c, std::make_unique<FedNova>(LocalSteps{}), model).ok());
  // A rule that needs each update keeps its asynchronous refusal.
  c.mode = "async";
  Result<std::unique_ptr<Strategy>> median = MakeStrategy("median");
  ASSERT_TRUE(median.ok());
  Status s = CheckStrategyComposes(**median, c);
  EXPECT_THAT(s.message(), HasSubstr("cannot be used with run.mode = 'async'"));
}

TEST(StrategyComposesTest, ScaffoldTakesNeitherOneSumNorAsynchronousSteps) {
  Result<std::unique_ptr<Strategy>> scaffold = MakeStrategy("scaffold");
  ASSERT_TRUE(scaffold.ok());
  RoundConfig c;
  EXPECT_TRUE(CheckStrategyComposes(**scaffold, c).ok());
  c.max_weight = 100;  // a capped weight only weighs its model delta: fine
  EXPECT_TRUE(CheckStrategyComposes(**scaffold, c).ok());
  c.secagg.enabled = true;
  EXPECT_THAT(CheckStrategyComposes(**scaffold, c).message(),
              AllOf(HasSubstr("'scaffold' cannot be used with secure aggregation"),
                    HasSubstr("two sums of different weights")));
  c.secagg.enabled = false;
  c.dp.enabled = true;
  EXPECT_THAT(CheckStrategyComposes(**scaffold, c).message(),
              HasSubstr("'scaffold' cannot be used with differential privacy"));
  c.dp.enabled = false;
  c.mode = "async";
  EXPECT_THAT(CheckStrategyComposes(**scaffold, c).message(),
              AllOf(HasSubstr("'scaffold' cannot be used with run.mode = 'async'"),
                    HasSubstr("use run.mode = 'sync'")));
}

}  // namespace
}  // namespace tributary
