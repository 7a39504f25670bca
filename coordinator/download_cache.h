// DownloadCache: the global model as clients receive it (a TaskAssignment's or EvaluateTask's
// ModelPayload), made once per model version and shared by every message that carries it.
//
// Raw floats (run.download_codec = "dense") are one copy of the model (SharedFloats); any other
// download codec's bytes are the encoded model (SharedBytes), encoded with the codec's stochastic
// rounding seeded by (run.seed, round, version), so a payload is a function of the run's seed and
// where it is sent, never of timing. A model the codec refuses (a non-finite weight) is sent raw,
// with a warning. Copying a payload shares its bytes: the outbox costs O(model + clients).
//
// The cache keeps the newest (version, round) payload: a synchronous round asks once per round
// (and once more for a federated evaluation), an asynchronous engine once per version for all the
// tasks it dispatches at that version.
//
// Not thread-safe (one engine's).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "compression/codec.h"
#include "protocol/messages.h"
#include "tributary/model_weights.h"

namespace tributary {

class DownloadCache {
 public:
  // `codec` is the run's download codec (MakeDownloadCodec); `seed` is run.seed.
  DownloadCache(std::unique_ptr<Codec> codec, uint64_t seed)
      : codec_(std::move(codec)), seed_(seed) {}

  // `model` at `version`, for messages of `round` (the stochastic rounding's seed).
  const ModelPayload& For(const ModelWeights& model, uint64_t version, uint64_t round);

 private:
  ModelPayload Make(const ModelWeights& model, uint64_t version, uint64_t round) const;

  std::unique_ptr<Codec> codec_;
  uint64_t seed_ = 0;
  std::optional<uint64_t> version_, round_;
  ModelPayload payload_;
};

}  // namespace tributary
