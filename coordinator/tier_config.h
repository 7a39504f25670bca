// TierConfig: what an aggregator of the tier (docs/tier.md) needs of the run to judge and fold its
// clients' updates exactly as the coordinator would: the round keys (run.codec, run.max_weight,
// run.min_num_examples, run.max_num_examples, fit.*, ...), run.strategy and run.server_lr. The
// coordinator sends it in AggregatorWelcome as TOML (the same keys as its own configuration) and
// the aggregator reads it back; nothing else of the run (paths, outputs) leaves the coordinator.
//
// Also the checks both sides make: whether a run can go through the tier at all (WhyNotThroughTier
// in engine_parts.h), and the strategy an aggregator folds with.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "aggregation/strategy.h"
#include "coordinator/round_config.h"
#include "coordinator/run_config.h"
#include "tributary/result.h"

namespace tributary {

struct TierConfig {
  RoundConfig round;
  std::string strategy = "fedavg";
  double server_lr = 1.0;
};

// The run's TierConfig as TOML.
std::string TierConfigToml(const RunConfig& run);
// Reads TierConfigToml's text back; InvalidArgument naming the key for anything it cannot take.
Result<TierConfig> ParseTierConfig(std::string_view toml);
// The strategy the run aggregates with (MakeStrategy with the run's options): what RunDriver
// aggregates with, and what an aggregator judges and folds with.
Result<std::unique_ptr<Strategy>> MakeTierStrategy(const TierConfig& config);

}  // namespace tributary
