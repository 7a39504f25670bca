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
// The U-shaped, label-private split (Vepakomma et al. 2018's "U-shaped configuration"; Gupta and
// Raskar 2018) cuts the model twice: the device holds the front, layers [0, cut), and the head,
// layers [head, end), with the loss and the labels; the server holds the middle, [cut, head), a
// part that ends at the second cut (num_classes 0) and starts from the first cut's activations.
// The device's weights are the front's followed by the head's (DeviceLayout); the whole model's
// are front, middle, head.
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
  ModelSpec device;  // the front: layers [0, cut); num_classes = 0
  ModelSpec
      server;  // layers [cut, end), or the middle [cut, head) (num_classes 0); input = cut_shape
  ModelSpec head;  // U-shaped only: layers [head, end); input = head_shape (no layers otherwise)
  size_t cut = 0;
  size_t head_cut = 0;       // 0: no head (the server part holds the loss)
  Shape3 cut_shape;          // per-sample shape of the activations at the cut
  Shape3 head_shape;         // U-shaped: per-sample shape of the middle part's output
  size_t device_params = 0;  // floats the device holds: the front's, and the head's
  size_t server_params = 0;
  size_t head_params = 0;  // of device_params, the head's (the last ones)

  bool u_shaped() const { return head_cut != 0; }
};

// Cuts `whole` before layer `cut` (the device part holds layers 0 .. cut-1), and with head > 0
// also before layer `head` (the U-shape: the device holds layers head .. end-1 too, the server
// cut .. head-1). InvalidArgument when a cut is not in [1, layers) or head is not after cut, the
// whole model's shapes do not fit (LayerOutputShapes), or a part holds no parameters (a front
// without any sends its raw inputs: that is not split learning; a server part without any learns
// nothing; a head without any would send up the loss's own gradient, which names every label),
// or the model has a dropout layer (each part would key its masks by its own steps), or a residual
// connection (`add`) crosses a cut. A part's `add` layers count `from` from the part's first layer.
Result<SplitModel> CutModel(const ModelSpec& whole, size_t cut, size_t head = 0);

// The layout of what the device holds: ParameterLayout(split.device), then (U-shaped)
// ParameterLayout(split.head).
Result<ModelWeights::LayoutSpec> DeviceLayout(const SplitModel& split);

// The whole model's weights cut into the device's (DeviceLayout) and the server part's
// (ParameterLayout(split.server)). InvalidArgument when `whole` is not in the whole model's layout.
Result<std::pair<ModelWeights, ModelWeights>> SplitWeights(const SplitModel& split,
                                                           const ModelWeights& whole);
// The inverse: the device's and the server part's weights as the whole model's.
Result<ModelWeights> JoinWeights(const SplitModel& split, const ModelWeights& device,
                                 const ModelWeights& server);
// U-shaped: the device's weights as the front's and the head's (the layouts of
// ParameterLayout(split.device) and (split.head)), and back. InvalidArgument for another layout.
Result<std::pair<ModelWeights, ModelWeights>> SplitDeviceWeights(const SplitModel& split,
                                                                 const ModelWeights& device);
Result<ModelWeights> JoinDeviceWeights(const SplitModel& split, const ModelWeights& front,
                                       const ModelWeights& head);

// Per-sample multiply-add FLOPs (2 per MAC) of one training step of each part: the device part's
// forward and weight gradients (and input gradients after its first layer), the server part's
// forward, weight gradients and input gradients at every layer (its first included: that is the
// gradient sent back); U-shaped, the device's also include the head's (whose first layer's input
// gradient goes up). Their sum is TrainFlopsPerSample(whole): the cut moves work, it adds none.
struct SplitFlops {
  int64_t device = 0;
  int64_t server = 0;
};
SplitFlops SplitTrainFlopsPerSample(const SplitModel& split);

}  // namespace tributary
