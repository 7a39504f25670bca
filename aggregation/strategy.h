// Strategy: how the coordinator turns a round's client updates into the next global model.
//
// A round runs BeginRound(global) -> Accumulate(...) once per accepted update -> Finalize(). An
// update is a delta against the round's global model (client weights minus global), written into
// the strategy through an UpdateSink by a `writer` (usually a codec's decoder). Streaming
// strategies (FedAvg and the server optimizers) fold each update into O(model) state as it arrives,
// so memory does not grow with the number of clients per round; a strategy that needs every update
// (median, Krum) says so and enforces a configured bound.
//
// State that must survive a crash (server-optimizer moments, momentum) is exported by SaveState as
// named float tensors, which the coordinator stores in its checkpoint next to the model.
//
// Not thread-safe: the round engine calls a strategy from one strand.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

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
  // Folds one client's update with aggregation weight `weight` (> 0; FedAvg uses num_examples).
  virtual Status Accumulate(double weight, const UpdateWriter& writer) = 0;
  // Updates accumulated since BeginRound.
  virtual size_t num_accumulated() const = 0;
  // The next global model. FailedPrecondition when nothing was accumulated.
  virtual Result<ModelWeights> Finalize() = 0;

  // Persistent state for checkpoints (empty for stateless strategies) and its restoration.
  virtual Result<ModelWeights> SaveState() const { return ModelWeights(); }
  virtual Status LoadState(const ModelWeights& /*state*/) { return Status::Ok(); }
};

}  // namespace tributary
