// Split learning's cut (docs/split.md): a model divided at a layer into the device part, which a
// client trains up to the cut, and the server part, which the coordinator trains from the cut's
// activations to the loss (Vepakomma et al. 2018; SplitFed: Thapa et al., AAAI 2022).
//
// The device part holds layers [0, cut) and the server part layers [cut, end). The device part is
// a ModelSpec with num_classes == 0 (it ends at the cut, not in logits); the server part's input is
// the cut's activation shape. Their parameter layouts are the whole model's, cut in two at the
// first tensor of the server part, so the whole model's weights are the device part's followed by
// the server part's, in one buffer (SplitWeights, JoinWeights).
//
// Thread-safe (pure functions).
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

#include "train/model_spec.h"
#include "tributary/model_weights.h"
#include "tributary/result.h"

namespace tributary {

struct SplitModel {
  ModelSpec whole;
  ModelSpec device;  // layers [0, cut); num_classes = 0
  ModelSpec server;  // layers [cut, end); input = cut_shape
  size_t cut = 0;
  Shape3 cut_shape;          // per-sample shape of the activations at the cut
  size_t device_params = 0;  // floats of the device part (the whole layout's first ones)
  size_t server_params = 0;
};

// Cuts `whole` before layer `cut` (the device part holds layers 0 .. cut-1). InvalidArgument when
// the cut is not in [1, layers), the whole model's shapes do not fit (LayerOutputShapes), or
// either part holds no parameters (a device part without any sends its raw inputs: that is not
// split learning; a server part without any learns nothing).
Result<SplitModel> CutModel(const ModelSpec& whole, size_t cut);

// The whole model's weights cut into the device part's and the server part's (their layouts are
// those of ParameterLayout(split.device) and (split.server)). InvalidArgument when `whole` is not
// in the whole model's layout.
Result<std::pair<ModelWeights, ModelWeights>> SplitWeights(const SplitModel& split,
                                                           const ModelWeights& whole);
// The inverse: the device part's and the server part's weights as the whole model's.
Result<ModelWeights> JoinWeights(const SplitModel& split, const ModelWeights& device,
                                 const ModelWeights& server);

// Per-sample multiply-add FLOPs (2 per MAC) of one training step of each part: the device part's
// forward and weight gradients (and input gradients after its first layer), the server part's
// forward, weight gradients and input gradients at every layer (its first included: that is the
// gradient sent back). Their sum is TrainFlopsPerSample(whole): the cut moves work, it adds none.
struct SplitFlops {
  int64_t device = 0;
  int64_t server = 0;
};
SplitFlops SplitTrainFlopsPerSample(const SplitModel& split);

}  // namespace tributary
