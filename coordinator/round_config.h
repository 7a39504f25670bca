// RoundConfig: how the coordinator runs rounds (selection, deadlines, local training settings),
// and its configuration keys (run.rounds, run.clients_per_round, ..., fit.*; BindRoundConfig).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "core/config_schema.h"
#include "privacy/dp/dp_config.h"
#include "tributary/status.h"
#include "tributary/trainer.h"

namespace tributary {

struct FrozenPart;  // protocol/messages.h

// Secure aggregation (docs/privacy.md): the coordinator learns only the sum of a round's updates.
struct SecAggConfig {
  bool enabled = false;
  float clip = 1.0f;              // update values are clipped to [-clip, clip]
  int64_t quant_bits = 16;        // levels per value: 2^quant_bits
  uint64_t max_weight = 1 << 16;  // a client's weight (num_examples) is capped here
  int64_t degree = 0;             // neighbours per client (0: sized for max_dropout)
  int64_t threshold = 0;          // shares that rebuild a secret (0: a majority of the degree)
  double max_dropout = 0.1;       // the dropout the default degree is sized for
  int64_t min_clients = 3;        // the fewest clients any phase may end with
  std::chrono::milliseconds phase_timeout{10'000};  // each phase but the masked input's
};

// Ok when secure aggregation can sum updates of `codec` (dense, qB, randk, randk+qB; the clients
// then send the dense delta into the integer domain, at B bits, at the round's coordinates);
// InvalidArgument saying why otherwise (top-k, sign, zstd).
Status SecAggCodecRefusal(const std::string& codec);

// Asynchronous buffered aggregation (run.mode = "async"; coordinator/async_engine.h, FedBuff).
struct AsyncConfig {
  // Clients training at once (C); 0: the buffer size. With secure aggregation at least
  // run.clients_per_round: clients go out in cohorts of that many, each with its own session.
  int64_t concurrency = 0;
  int64_t buffer_size = 0;     // accepted updates per step (K); 0: run.clients_per_round
  int64_t max_staleness = 20;  // an update more versions behind the current model is refused
  std::string staleness_weight = "sqrt";  // s(t): coordinator/staleness_weight.h
};

// Split learning (docs/split.md): the model cut in two, the clients training the device part
// through the coordinator's server part (split/split_server.h).
struct SplitConfig {
  std::string mode;  // "": off; "sflv1" or "sflv2" (SplitFed's two forms)
  int64_t cut = 0;   // the device part holds layers 0 .. cut-1; 0: the model file's own cut
  int64_t head = 0;  // U-shaped: the device also holds layers head .. end (and the labels); 0: off
  std::string codec = "dense";  // how activations and gradients travel (no error feedback)
  int64_t threads = 1;          // CPU threads of each server part's engine
  int64_t pool = 0;             // threads that train server parts at once (0: the CPU count)
  bool enabled() const { return !mode.empty(); }
};

struct RoundConfig {
  // "sync": rounds that wait for K updates or their deadline (RoundEngine); "async": buffered
  // asynchronous aggregation (AsyncEngine), where run.rounds counts steps.
  std::string mode = "sync";
  AsyncConfig async;
  int64_t rounds = 10;             // rounds to run (asynchronous: steps)
  int64_t clients_per_round = 10;  // target updates per round (K); ignored when fraction > 0
  double fraction = 0.0;           // K = ceil(fraction * connected clients) when > 0
  int64_t min_available = 1;       // a round starts only with at least this many idle clients
  double over_selection = 1.0;     // select ceil(K * over_selection) clients to absorb dropouts
  // At the deadline a round closes with at least this many updates; 0 means all K of them.
  int64_t min_completed = 1;
  std::chrono::milliseconds round_timeout{120'000};
  int64_t max_round_attempts = 20;  // a round that fails is retried; 0 retries forever
  // A client selected that sends no update by the deadline, or whose update is refused, is left
  // out of selection for 1, 2, 4, ... rounds (consecutive misses), at most this many; 0: never.
  int64_t cooldown_max_rounds = 16;
  FitConfig fit;                // sent to clients (the engine derives fit.seed per client)
  std::string codec = "dense";  // the update pipeline every client must use
  // How the global model travels to clients (TaskAssignment, EvaluateTask): a codec that is
  // usable_for_download(), e.g. "dense" (raw float32) or "q8" (1 byte per float plus a float scale
  // per 512); clients must advertise its stages. The client trains from, and computes its delta
  // against, the decoded model.
  std::string download_codec = "dense";
  uint64_t seed = 1;  // selection and per-client training seeds
  // An update claiming fewer examples than min_num_examples, or more than its sender announced at
  // Hello (MaxExamplesOf), is refused; a Hello announcing more than max_num_examples is refused.
  uint64_t min_num_examples = 1;
  uint64_t max_num_examples = uint64_t{1} << 30;
  // The most an update weighs in the aggregate, whatever its num_examples (0: no cap beyond
  // max_num_examples; 1: every client weighs the same). Applied before the fold, so secure
  // aggregation's integer weights are capped at it too.
  uint64_t max_weight = 0;
  int64_t federated_eval_every =
      0;  // ask the round's clients to evaluate every k rounds (0: never)
  SecAggConfig secagg;
  DpConfig dp;  // differential privacy (privacy/dp/dp_config.h)
  // Pace steering (docs/tier.md): when > 0, at most this many idle clients connected to the
  // coordinator stay connected while a round runs; the others (drawn by the run's seed) are told
  // to come back at a time each draws in [pace_come_back, pace_come_back + pace_window];
  // pace_window 0: derived from the fleet and the rounds' pace (coordinator/pace_window.h).
  int64_t pace_max_idle = 0;
  std::chrono::milliseconds pace_come_back{60'000};
  std::chrono::milliseconds pace_window{60'000};
  SplitConfig split;
  // Set by RunDriver from the model (the cut's layer index, when split.enabled()): what the
  // engines stamp on every TaskAssignment (split_cut, with split.codec). Not a key.
  uint32_t split_cut = 0;
  uint32_t split_head = 0;  // the U-shape's second cut (split.head), stamped as split_head
  // run.federate: "all" (every tensor is aggregated and sent) or "unfrozen" (only the tensors of
  // the model's layers that are not frozen; docs/models.md).
  std::string federate = "all";
  // Set by RunDriver when run.federate = "unfrozen" and the model freezes a layer: the federated
  // tensors' indices, the frozen rest's hash and values, which the engines stamp on every task
  // (StampFrozen). Null otherwise. Not a key.
  std::shared_ptr<const FrozenPart> frozen;

  // InvalidArgument naming the key when a value is out of range or inconsistent.
  Status Validate() const;

  // The run.mode = "async" keys' checks (within Validate).
  Status ValidateAsync() const;
  // The split.* keys' checks, and what split learning cannot compose with (within Validate).
  Status ValidateSplit() const;

  bool asynchronous() const { return mode == "async"; }
  // The asynchronous engine's K and C, their defaults resolved.
  int64_t BufferSize() const {
    return async.buffer_size > 0 ? async.buffer_size : clients_per_round;
  }
  int64_t Concurrency() const { return async.concurrency > 0 ? async.concurrency : BufferSize(); }

  // The most examples an update of a client that announced `announced` at Hello may claim: that
  // count, or max_num_examples when the client announced none (0) or more than it.
  uint64_t MaxExamplesOf(uint64_t announced) const {
    return announced == 0 ? max_num_examples : std::min(announced, max_num_examples);
  }
  // The aggregation weight of an update of `num_examples` examples: capped at max_weight when set.
  uint64_t WeightOf(uint64_t num_examples) const {
    return max_weight == 0 ? num_examples : std::min(num_examples, max_weight);
  }
};

// The keys: run.mode, run.concurrency, run.buffer_size, run.max_staleness, run.staleness_weight,
// run.rounds, run.clients_per_round, run.fraction, run.min_available,
// run.over_selection, run.min_completed, run.round_timeout_s, run.max_round_attempts,
// run.cooldown_max_rounds, run.seed, run.codec, run.download_codec, run.min_num_examples,
// run.max_num_examples, run.max_weight, eval.federated_every, secagg.*, dp.*, split.*, and fit.*
// (core/fit_config.h).
void BindRoundConfig(ConfigSchema& schema, RoundConfig* round);

}  // namespace tributary
