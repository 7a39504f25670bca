// Checkpoint: the coordinator's durable state after a round, written atomically.
//
// One safetensors file, <dir>/checkpoint.safetensors, holding the global model (tensors prefixed
// "model."), the strategy's state (prefixed "strategy."), and metadata: rounds completed, model
// version, run seed, strategy name and the model's layout fingerprint. Selection and per-client
// training seeds are derived from (seed, round, attempt), so no RNG stream state is needed to
// resume exactly. The file is replaced with write-temp, fsync, rename, fsync-dir (WriteFileAtomic)
// through an Env: after a crash at any write point it holds the previous round or the new one,
// never a mix (tests/coordinator/checkpoint_test.cc crashes at every one).
#pragma once

#include <cstdint>
#include <string>

#include "core/env.h"
#include "tributary/model_weights.h"
#include "tributary/result.h"

namespace tributary {

struct CheckpointState {
  uint64_t rounds_done = 0;
  uint64_t model_version = 0;
  uint64_t seed = 0;
  std::string strategy;
  std::string model_name;
  ModelWeights model;
  ModelWeights strategy_state;  // may be empty
};

std::string CheckpointPath(const std::string& dir);
// The largest checkpoint file LoadCheckpoint reads.
inline constexpr uint64_t kMaxCheckpointBytes = uint64_t{1} << 40;
// Creates `dir` if needed and replaces the checkpoint in it atomically.
Status SaveCheckpoint(Env* env, const std::string& dir, const CheckpointState& state);
// NotFound when there is no checkpoint in `dir`; Corruption (naming the file) when it is damaged.
Result<CheckpointState> LoadCheckpoint(Env* env, const std::string& dir);

}  // namespace tributary
