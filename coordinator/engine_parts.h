// Small helpers both run engines (RoundEngine, AsyncEngine) use: a client id's hash for seeds,
// seconds between time points, the first non-finite weight of a model, recording a selection
// miss with its warning, and whether a strategy composes with the run's mode. Stateless;
// thread-safe except RecordCoolDownMiss (the registry's).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "aggregation/strategy.h"
#include "coordinator/client_registry.h"
#include "coordinator/round_config.h"
#include "core/clock.h"
#include "protocol/messages.h"
#include "tributary/model_weights.h"

namespace tributary {

// FNV-1a of the id: what per-client training seeds are derived with.
uint64_t ClientIdHash(const std::string& id);
double SecondsBetween(TimePoint a, TimePoint b);
// "nan in tensor 'x' at index i" for the first non-finite weight, "" when all are finite.
std::string FirstNonFinite(const ModelWeights& w);
// A miss by `id` in round (or step) `at` (ClientRegistry::RecordMiss, capped at `cap`; 0: no
// cool-downs), with a warning naming the client, why, and until when, in `unit`s ("round",
// "step"); nothing when the miss of `at` was already on record.
void RecordCoolDownMiss(ClientRegistry& registry, const std::string& id, std::string_view why,
                        uint64_t at, uint64_t cap, bool refused, std::string_view unit);

// OK when `strategy` can aggregate the run `config` describes; else InvalidArgument naming the
// strategy, the part of the run it cannot take and its reason: secure aggregation and
// differential privacy hand it one sum (no rule that needs each update, or each one's weight),
// run.max_weight caps each weight (no rule that needs each one's weight), asynchronous steps fold
// each update as it arrives (no rule that needs each update, nor one with control variates:
// SCAFFOLD takes none of secure aggregation, differential privacy and asynchronous steps).
Status CheckStrategyComposes(const Strategy& strategy, const RoundConfig& config);

// Empty when the run `config` describes can go through an aggregation tier (docs/tier.md:
// aggregators fold their clients' updates into exact partial sums the coordinator merges, giving
// bitwise the model of one coordinator); else why not, in words an operator reads in the
// aggregator's refusal: the asynchronous mode, differential privacy without secure aggregation
// (with it, the clients add the noise), federated evaluation, and a rule without a partial sum
// (one that needs each update, each one's weight, or control variates) are not supported through
// the tier yet. Secure aggregation is, one session per aggregator's group.
std::string WhyNotThroughTier(const Strategy& strategy, const RoundConfig& config);

// run.federate = "unfrozen" (config.frozen set): stamps the run's FrozenPart on a task for
// `client`, with the frozen tensors' values when they have not gone out to it since it joined
// (ClientRecord::holds_frozen, then set); returns the bytes of values added (0 when none, or
// without config.frozen, when `out` is left empty).
uint64_t StampFrozen(const RoundConfig& config, ClientRecord& client, FrozenPart& out);

}  // namespace tributary
