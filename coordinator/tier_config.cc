#include "coordinator/tier_config.h"

#include "aggregation/strategy_factory.h"
#include "core/config.h"
#include "core/config_schema.h"

namespace tributary {
namespace {

void BindTierConfig(ConfigSchema& schema, TierConfig* t) {
  BindRoundConfig(schema, &t->round);
  schema.Bind("run.strategy", &t->strategy, "the run's aggregation rule");
  schema.Bind("run.server_lr", &t->server_lr, "server learning rate");
}

}  // namespace

std::string TierConfigToml(const RunConfig& run) {
  TierConfig t{run.round, run.strategy, run.server_lr};
  ConfigSchema schema("tributary-coordinator");
  BindTierConfig(schema, &t);
  return schema.ValuesToml();
}

Result<TierConfig> ParseTierConfig(std::string_view toml) {
  TierConfig t;
  ConfigSchema schema("tributary-aggregator");
  BindTierConfig(schema, &t);
  TRIB_ASSIGN_OR_RETURN(Config doc, Config::Parse(toml, "the coordinator's run configuration"));
  TRIB_RETURN_IF_ERROR(schema.Load(doc));
  TRIB_RETURN_IF_ERROR(t.round.Validate());
  return t;
}

Result<std::unique_ptr<Strategy>> MakeTierStrategy(const TierConfig& config) {
  StrategyOptions so;
  so.server_lr = static_cast<float>(config.server_lr);
  so.local = {config.round.fit.epochs, config.round.fit.batch_size, config.round.fit.max_steps,
              config.round.fit.momentum};
  Result<std::unique_ptr<Strategy>> s = MakeStrategy(config.strategy, so);
  if (!s.ok()) return s.status().WithContext("key 'run.strategy'");
  return s;
}

}  // namespace tributary
