// Strategy: how the coordinator turns a round's client updates into the next global model.
//
// A round runs BeginRound(global) -> Accumulate(...) once per accepted update -> Finalize(). An
// update is a delta against the round's global model (client weights minus global), written into
// the strategy through an UpdateSink by a `writer` (usually a codec's decoder). Streaming
// strategies (FedAvg and the server optimizers) fold each update into O(model) state as it arrives,
// so memory does not grow with the number of clients per round; a strategy that needs every update
// (median, Krum) says so and enforces a configured bound.
//
// Each update is checked with CheckUpdate (what validation learned about it, and its weight) before
// it is folded, so a rule with a limited range (FedAvg's fixed-point sum) refuses an update it
// cannot hold instead of corrupting the aggregate.
//
// Before the first round the coordinator calls CheckRoundSize(clients_per_round) so that a rule
// that cannot work with that many updates (Krum needs n > 2f + 2) is rejected at start-up. A round
// that closes with fewer updates than the rule needs (a deadline with dropouts) makes Finalize
// return FailedPrecondition; the round then fails and is retried, nothing crashes.
//
// State that must survive a crash (server-optimizer moments, momentum) is exported by SaveState as
// named float tensors, which the coordinator stores in its checkpoint next to the model. LoadState
// checks the tensors against the rule and the model's size, so a checkpoint of another model or
// rule is refused when it is loaded, not when a round begins.
//
// Not thread-safe: the round engine calls a strategy from one strand.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "aggregation/partial_sum.h"
#include "compression/codec.h"
#include "compression/update_sink.h"
#include "tributary/model_weights.h"

namespace tributary {

// Writes one validated update into `sink`, every value multiplied by `scale`.
using UpdateWriter = std::function<void(UpdateSink& sink, float scale)>;

class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual std::string_view name() const = 0;

  // Starts a round from `global`. Discards anything accumulated and not finalized.
  virtual Status BeginRound(const ModelWeights& global) = 0;
  // Folds one client's update with aggregation weight `weight` (an integer >= 1: FedAvg uses
  // num_examples, exactly; see weighted_mean.h).
  virtual Status Accumulate(uint64_t weight, const UpdateWriter& writer) = 0;
  // Updates accumulated since BeginRound.
  virtual size_t num_accumulated() const = 0;
  // The next global model. FailedPrecondition when nothing was accumulated, or fewer updates than
  // the rule needs (see CheckRoundSize); persistent state (moments) is then left unchanged.
  virtual Result<ModelWeights> Finalize() = 0;

  // A dense update's bytes (little-endian floats, the "dense" codec's form) checked and folded in
  // one pass over them, where the rule folds into an exact fixed-point sum
  // (WeightedMean::AddDense): the same as DenseCodec::Validate, CheckUpdate and Accumulate with
  // DecodeInto at `scale` (in [0, 1]), reading the update once. OK when folded; OutOfRange when a
  // value is not finite or out of range, and then nothing changed (Validate and CheckUpdate name
  // why); Unimplemented for a rule that cannot (callers then take the three steps); otherwise
  // Accumulate's errors.
  virtual Status AccumulateDense(uint64_t /*weight*/, std::span<const uint8_t> /*bytes*/,
                                 float /*scale*/) {
    return Status::Unimplemented(std::string(name()) + " folds no dense bytes in one pass");
  }

  // OK when the rule can fold an update whose decoded values are described by `stats`, with
  // aggregation weight `weight`; else InvalidArgument saying why.
  virtual Status CheckUpdate(const UpdateStats& /*stats*/, uint64_t /*weight*/) const {
    return Status::Ok();
  }

  // Partial aggregates (several processes fold parts of one round; partial_sum.h): the exact sum
  // folded since BeginRound, or null for a rule that needs each update (it has no such sum).
  virtual const PartialSum* partial_sum() const { return nullptr; }
  // Adds another process's partial sum of this round, as if its updates had been accumulated
  // here: bitwise the same Finalize. Unimplemented for a rule without a partial sum;
  // InvalidArgument when `partial` does not fit (PartialSum::Check).
  virtual Status MergePartialSum(const PartialSum& /*partial*/) {
    return Status::Unimplemented(std::string(name()) + " cannot merge partial sums");
  }

  // OK when a round of `n` updates satisfies the rule's requirements; else InvalidArgument naming
  // the requirement and the rule's parameters.
  virtual Status CheckRoundSize(int64_t n) const {
    if (n < 1) return Status::InvalidArgument("a round needs at least 1 update");
    return Status::Ok();
  }
  // Empty when the rule needs only the weighted sum of a round's updates (FedAvg, the server
  // optimizers), so it works with secure aggregation, which shows the coordinator nothing else;
  // otherwise why it needs each update (a robust rule ranks them, norm clipping measures each).
  virtual std::string needs_each_update() const { return ""; }
  // Empty when the rule can fold a sum of updates as one update of their summed weight; otherwise
  // why each update's own weight matters (FedNova scales each by its local steps). Such a rule
  // streams (asynchronous steps take it) but, like one that needs each update, cannot take secure
  // aggregation's or differential privacy's single sum.
  virtual std::string needs_each_weight() const { return ""; }
  // The proximal coefficient clients should put in FitConfig::proximal_mu (FedProx); 0 otherwise.
  virtual float client_proximal_mu() const { return 0.0f; }

  // Control variates (SCAFFOLD, scaffold.h). A rule that uses them sends its server control
  // variate with every task (server_control(), valid from BeginRound to Finalize: one float per
  // parameter) and needs every accepted update's control delta: the engine checks it with
  // CheckControl and folds it with AccumulateControl right after the update's Accumulate. Such a
  // rule needs two sums with different weights, so it takes neither secure aggregation's nor
  // differential privacy's single sum, nor asynchronous steps.
  virtual bool uses_control_variates() const { return false; }
  virtual std::span<const float> server_control() const { return {}; }
  virtual Status CheckControl(const UpdateStats& /*stats*/) const {
    return Status::InvalidArgument(std::string(name()) + " takes no control deltas");
  }
  virtual Status AccumulateControl(std::span<const float> /*delta*/) {
    return Status::Unimplemented(std::string(name()) + " takes no control deltas");
  }

  // Persistent state for checkpoints (empty for stateless strategies) and its restoration for a
  // model of `model_size` floats; InvalidArgument naming what does not fit.
  virtual Result<ModelWeights> SaveState() const { return ModelWeights(); }
  virtual Status LoadState(const ModelWeights& state, size_t /*model_size*/) {
    if (state.num_tensors() != 0)
      return Status::InvalidArgument(std::string(name()) +
                                     " keeps no state, but the checkpoint holds " +
                                     std::to_string(state.num_tensors()) + " strategy tensors");
    return Status::Ok();
  }
};

}  // namespace tributary
