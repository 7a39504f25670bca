#include "aggregation/strategy_factory.h"

#include <cmath>

#include "aggregation/fedavg.h"

namespace tributary {

std::vector<std::string> StrategyNames() { return {"fedavg"}; }

Result<std::unique_ptr<Strategy>> MakeStrategy(std::string_view name, const StrategyOptions& o) {
  if (!(o.server_lr > 0.0f) || !std::isfinite(o.server_lr))
    return Status::InvalidArgument("strategy option server_lr must be a positive number");
  if (name == "fedavg") return std::unique_ptr<Strategy>(std::make_unique<FedAvg>(o.server_lr));
  return Status::InvalidArgument("unknown strategy '" + std::string(name) +
                                 "'; known strategies: fedavg");
}

}  // namespace tributary
