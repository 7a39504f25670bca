// MakeStrategy: builds a Strategy from its name and options (the coordinator's `strategy` key).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "aggregation/strategy.h"

namespace tributary {

struct StrategyOptions {
  float server_lr = 1.0f;  // FedAvg: scales the averaged delta
};

// InvalidArgument listing the known strategies when `name` is unknown, or naming the bad option.
Result<std::unique_ptr<Strategy>> MakeStrategy(std::string_view name,
                                               const StrategyOptions& options = {});
std::vector<std::string> StrategyNames();

}  // namespace tributary
