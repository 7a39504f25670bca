#include "coordinator/engine_parts.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <span>

#include "core/hash.h"
#include "core/log.h"
#include "core/non_finite.h"

namespace tributary {

uint64_t ClientIdHash(const std::string& id) {
  Fnv1a64 h;
  h.Add(id.data(), id.size());
  return h.value();
}

double SecondsBetween(TimePoint a, TimePoint b) {
  return std::chrono::duration<double>(b - a).count();
}

std::string FirstNonFinite(const ModelWeights& w) {
  const std::optional<NonFinite> bad = FindNonFinite(w);
  return bad ? fmt::format("{} in tensor '{}' at index {}", bad->value, bad->tensor, bad->index)
             : std::string();
}

void RecordCoolDownMiss(ClientRegistry& registry, const std::string& id, std::string_view why,
                        uint64_t at, uint64_t cap, bool refused, std::string_view unit) {
  if (cap == 0) return;
  const uint64_t before = registry.CoolingUntil(id);
  registry.RecordMiss(id, at, cap, refused);
  const uint64_t until = registry.CoolingUntil(id);
  if (until == before) return;  // its miss of this round is already on record
  Log().warn("client '{}' {} in {} {}: left out of selection until {} {} ({} misses in a row)", id,
             why, unit, at, unit, until, registry.cooldowns().find(id)->second.misses);
}

Status CheckStrategyComposes(const Strategy& strategy, const RoundConfig& config) {
  std::string why_sum = strategy.needs_each_update();
  if (why_sum.empty()) why_sum = strategy.needs_each_weight();
  if (config.secagg.enabled && !why_sum.empty())
    return Status::InvalidArgument(fmt::format(
        "strategy '{}' cannot be used with secure aggregation, which shows the coordinator only "
        "the sum of the updates: {}",
        strategy.name(), why_sum));
  if (config.dp.enabled && !why_sum.empty())
    return Status::InvalidArgument(fmt::format(
        "strategy '{}' cannot be used with differential privacy, whose guarantee covers the "
        "noised sum of clipped updates (the dp.clip_norm stage clips each update itself): {}",
        strategy.name(), why_sum));
  if (config.max_weight > 0)
    if (std::string why = strategy.needs_each_weight(); !why.empty())
      return Status::InvalidArgument(fmt::format(
          "strategy '{}' cannot be used with run.max_weight = {}, which caps the weight that "
          "stands for a client's examples: {}",
          strategy.name(), config.max_weight, why));
  if (strategy.uses_control_variates()) {
    constexpr const char* kWhy =
        "its model deltas and control deltas are two sums of different weights";
    if (config.secagg.enabled)
      return Status::InvalidArgument(fmt::format(
          "strategy '{}' cannot be used with secure aggregation, which shows the coordinator one "
          "sum of the updates: {}",
          strategy.name(), kWhy));
    if (config.dp.enabled)
      return Status::InvalidArgument(fmt::format(
          "strategy '{}' cannot be used with differential privacy, whose guarantee covers one "
          "noised sum of clipped updates: {}",
          strategy.name(), kWhy));
    if (config.asynchronous())
      return Status::InvalidArgument(fmt::format(
          "strategy '{}' cannot be used with run.mode = 'async': a stale client's control delta "
          "was computed against a control variate the server has since moved, which the method "
          "does not define; use run.mode = 'sync'",
          strategy.name()));
  }
  if (config.asynchronous())
    if (std::string why = strategy.needs_each_update(); !why.empty())
      return Status::InvalidArgument(fmt::format(
          "strategy '{}' cannot be used with run.mode = 'async', whose steps fold each update "
          "into a running sum as it arrives: {}",
          strategy.name(), why));
  return Status::Ok();
}

uint64_t StampFrozen(const RoundConfig& config, ClientRecord& client, FrozenPart& out) {
  if (!config.frozen) return 0;
  out.federated = config.frozen->federated;
  out.hash = config.frozen->hash;
  if (client.holds_frozen) return 0;
  client.holds_frozen = true;
  out.values = config.frozen->values;  // shared, not copied
  return out.values.size() * sizeof(float);
}

std::string WhyNotThroughTier(const Strategy& strategy, const RoundConfig& config) {
  if (config.federate == "unfrozen")
    return "run.federate = \"unfrozen\": an aggregator's group task carries one model for all "
           "its clients, not the frozen tensors for those that do not hold them yet";
  if (config.mode == "async")
    return "run.mode = \"async\": asynchronous steps do not run through the aggregation tier yet";
  // Secure aggregation runs one session per aggregator's group (TierSecAgg); differential privacy
  // then adds its noise on the clients, as without the tier.
  if (config.dp.enabled && !config.secagg.enabled)
    return "dp.enabled without secagg.enabled: the coordinator's noise on the sum of clipped "
           "updates does not run through the aggregation tier yet (with secure aggregation the "
           "clients add it, and that does)";
  if (config.federated_eval_every > 0)
    return "eval.federated_every: federated evaluation does not run through the aggregation tier "
           "yet";
  if (config.split.enabled())
    return "split.mode: a split run's batches go to the coordinator's server part, not through "
           "the aggregation tier";
  if (std::string why = strategy.needs_each_update(); !why.empty())
    return "strategy " + std::string(strategy.name()) + " needs each update (" + why +
           "); an aggregator sends the coordinator only the sum of its clients' updates";
  if (std::string why = strategy.needs_each_weight(); !why.empty())
    return "strategy " + std::string(strategy.name()) + " needs each update's weight (" + why +
           "); an aggregator sends the coordinator only the sum of its clients' updates";
  if (strategy.uses_control_variates())
    return "strategy " + std::string(strategy.name()) +
           " uses control variates, which the aggregation tier does not carry yet";
  if (strategy.partial_sum() == nullptr)
    return "strategy " + std::string(strategy.name()) + " has no exact partial sum to merge";
  return "";
}

}  // namespace tributary
