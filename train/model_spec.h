// ModelSpec: a backend-independent description of a sequential network, and the model zoo.
//
// A spec lists layers; it is built in code or read from a model file (train/model_file.h). From it
// come the parameter layout (names and shapes in ModelWeights), the initial weights, and the FLOP
// count. Every backend (cpu/, cuda/) builds its network from a spec, so a ModelWeights trained on
// one backend loads on any other.
//
// Tensor conventions (documented in docs/architecture.md):
//   activations are NHWC; Dense weight is [out, in] (as PyTorch's nn.Linear), bias [out];
//   Conv2D weight is [out_channels, kernel_h, kernel_w, in_channels] (OHWI), bias [out_channels].
//   A PyTorch user gets OIHW with weight.permute(0, 3, 1, 2).
//   Conv1D weight is [out_channels, kernel, in_channels], bias [out_channels]; PyTorch's Conv1d
//   weight is weight.permute(0, 2, 1).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "train/loss_math.h"
#include "tributary/model_weights.h"
#include "tributary/result.h"

namespace tributary {

// kSigmoid, kTanh and kGelu (the erf form, PyTorch's default) are elementwise like kReLU;
// kAvgPool2D averages size x size windows (stride size) and kGlobalAvgPool each channel's whole
// h x w plane. kGroupNorm and kLayerNorm normalize (train/norm_math.h) with a gamma and a beta per
// channel ("<name>.weight", "<name>.bias", [c] each; initially 1 and 0). kConv1D convolves along
// the input's rows: an h x w x c input is a sequence of h steps of w * c channels (so [N, L, C]
// sensor windows read as h = L, w = C, c = 1 are L steps of C channels), and its output is
// (h + 2p - k + 1) x 1 x filters. kDepthwiseConv2D convolves each channel with its own k x k kernel
// (train/depthwise_math.h; weight [c, k, k, 1], bias [c]); with a 1 x 1 conv2d after it, it makes
// a depthwise-separable convolution. kDropout zeroes each value with probability `rate` in training
// and scales the others by 1 / (1 - rate) (train/dropout_math.h); in evaluation and prediction it
// is the identity. kAdd is a residual connection: it adds the output of an earlier layer `from`
// (LayerSpec::from) to its input, which must have the same shape; its backward passes the
// gradient through and also back to that layer's output.
enum class LayerKind {
  kDense,
  kConv2D,
  kMaxPool2D,
  kReLU,
  kFlatten,
  kSigmoid,
  kTanh,
  kGelu,
  kAvgPool2D,
  kGlobalAvgPool,
  kGroupNorm,
  kLayerNorm,
  kConv1D,
  kDepthwiseConv2D,
  kEmbedding,
  kLstm,
  kGru,
  kDropout,
  kAdd
};
// LSTM or GRU: a recurrent layer over the steps of its input (LayerSpec::return_sequences).
inline bool IsRecurrent(LayerKind kind) {
  return kind == LayerKind::kLstm || kind == LayerKind::kGru;
}
// A recurrent layer's gate rows per unit: 4 for an LSTM (i, f, g, o), 3 for a GRU (r, z, n).
inline int64_t GatesPerUnit(LayerKind kind) { return kind == LayerKind::kLstm ? 4 : 3; }

std::string_view LayerKindName(LayerKind kind);
// GroupNorm or LayerNorm: a layer with a gamma and a beta per channel.
inline bool IsNorm(LayerKind kind) {
  return kind == LayerKind::kGroupNorm || kind == LayerKind::kLayerNorm;
}
// Conv2D or Conv1D: a convolution with a weight and a bias (ConvTapsOf gives what engines run).
inline bool IsConv(LayerKind kind) {
  return kind == LayerKind::kConv2D || kind == LayerKind::kConv1D;
}
// A layer with a weight and a bias initialized as PyTorch's nn.Linear / nn.Conv2d: Dense, the
// convolutions and DepthwiseConv2D.
inline bool HasWeightMatrix(LayerKind kind) {
  return kind == LayerKind::kDense || IsConv(kind) || kind == LayerKind::kDepthwiseConv2D;
}
// How many parameter tensors a layer of this kind has (ParameterLayout lists them in layer order):
// 2 (weight, bias) for the weight-matrix and norm layers, 1 (weight) for Embedding, 4 for LSTM
// and GRU, else 0.
inline int ParameterTensorCount(LayerKind kind) {
  if (kind == LayerKind::kEmbedding) return 1;
  if (IsRecurrent(kind)) return 4;  // weight_ih, weight_hh, bias_ih, bias_hh
  return HasWeightMatrix(kind) || IsNorm(kind) ? 2 : 0;
}

struct LayerSpec {
  LayerKind kind = LayerKind::kReLU;
  // Dense; Embedding: the vector size (its model-file key `dim`); LSTM, GRU: the hidden units.
  int64_t out_features = 0;
  int64_t out_channels = 0;  // Conv2D, Conv1D
  int64_t kernel = 0;        // Conv2D, DepthwiseConv2D: square kernel; Conv1D: taps; pools: window
  int64_t padding = 0;       // Conv2D: zero padding on every side, Conv1D: at both ends (stride 1)
  int64_t groups = 0;        // GroupNorm: channel groups (they must divide the channels)
  // Embedding (the first layer only): each input value is a token id in [0, vocab), looked up in
  // a [vocab, out_features] table: an h x w x c input gives a sequence of h*w*c steps, each of
  // out_features values ((h*w*c) x 1 x out_features, what a conv1d reads as steps).
  int64_t vocab = 0;
  // Embedding: the token id that marks padding, or -1 (none). A sample's length is then the
  // number of positions before its first pad token (SequenceLength, train/embedding_math.h), and
  // every LSTM and GRU after it (their steps must be the embedding's positions) stops at that
  // length: PyTorch's pack_padded_sequence. The pad row of the table still exists; no gradient
  // reaches it through a recurrent layer.
  int64_t pad = -1;
  // LSTM, GRU: an h x w x c input is h steps of w*c features (as Conv1D reads it); the output is
  // the last step's hidden state (1 x 1 x units) or, with return_sequences, every step's
  // (h x 1 x units).
  bool return_sequences = false;
  // Dropout: the probability of zeroing a value in training, in [0, 1).
  float rate = 0.0f;
  // Add: the index of the earlier layer whose output is added to this layer's input.
  int64_t from = 0;
  // A layer with parameters that training leaves as they are (fine-tuning the layers after it):
  // the optimizer skips them (no step, no weight decay, no momentum), so their delta is zero.
  bool frozen = false;
  std::string name;  // parameter prefix, e.g. "conv1", "fc2", "norm1" (layers with any)
  friend bool operator==(const LayerSpec&, const LayerSpec&) = default;
};

// Per-sample activation shape: height x width x channels. A flat vector is 1 x 1 x features.
struct Shape3 {
  int64_t h = 1, w = 1, c = 1;
  int64_t numel() const { return h * w * c; }
  friend bool operator==(const Shape3&, const Shape3&) = default;
};

// The convolution an engine runs for a Conv2D or Conv1D layer: stride 1, kh x kw taps, ph and pw
// zeros of padding above/below and left/right, over an h x w x c NHWC input; the weight is the
// OHWI [out_channels, kh, kw, c] array (for Conv1D, whose kw is 1, that is its [out, k, c]).
struct ConvTaps {
  int64_t h = 1, w = 1, c = 1;
  int64_t kh = 1, kw = 1, ph = 0, pw = 0;
  int64_t oh() const { return h + 2 * ph - kh + 1; }
  int64_t ow() const { return w + 2 * pw - kw + 1; }
  int64_t taps() const { return kh * kw * c; }
};
struct LayerSpec;
// For a convolution layer `l` (IsConv) on a per-sample input of shape `in`. Conv2D: a square
// kernel with the same padding on every side; Conv1D: the input seen as h x 1 x (w*c), kernel
// kernel x 1, padding on the rows only.
ConvTaps ConvTapsOf(const LayerSpec& l, const Shape3& in);

struct ModelSpec {
  std::string name;
  Shape3 input;
  // 0: the model ends at a cut, not in logits (split learning's device part, model_split.h); its
  // last layer may produce any shape, and engines train it only through the cut.
  int num_classes = 10;
  std::vector<LayerSpec> layers;
  // Split learning's default cut (model_split.h: the device part holds layers 0 .. cut-1), from
  // the model file's `cut`; 0: the model names none.
  int64_t cut = 0;
  // The training loss on the last layer's outputs (train/loss_math.h), from the model file's
  // `loss`; it also decides what predict() returns.
  LossKind loss = LossKind::kSoftmaxCrossEntropy;
  friend bool operator==(const ModelSpec&, const ModelSpec&) = default;
};

// The model zoo, for 28x28x1 inputs (Fashion-MNIST) and 10 classes:
//   mlp:   784-200-200-10 (the FedAvg paper's 2NN)
//   cnn:   conv 5x5x32 (same), pool 2, conv 5x5x64 (same), pool 2, dense 512, dense 10 (FedAvg CNN)
//   lenet: conv 5x5x6 (pad 2), pool 2, conv 5x5x16, pool 2, dense 120, 84, 10
// Each names a cut for split learning after its first block (dense + relu; conv + relu + pool).
// Each is a model file (train/model_file.h) compiled into the library, leaving out its input and
// class count, which come from `input` and `num_classes`. Fails with InvalidArgument listing the
// known names, or naming the layer whose shape does not fit `input`. Programs resolve their
// run.model with ResolveModelSpec (train/model_file.h), which also takes model files.
Result<ModelSpec> ModelSpecByName(std::string_view name, Shape3 input = {28, 28, 1},
                                  int num_classes = 10);
std::vector<std::string> ModelNames();

// The positions of each sample whose length the model's first layer (an embedding with a pad)
// gives its recurrent layers, or 0 when the model has no sequence lengths.
int64_t SequencePositions(const ModelSpec& spec);

// Output shape of each layer (shapes[i] is layer i's output); fails naming the first layer whose
// input shape does not fit, or when the last layer does not produce num_classes features (unless
// num_classes is 0: a device part).
Result<std::vector<Shape3>> LayerOutputShapes(const ModelSpec& spec);

// Names and shapes of every parameter tensor, in layer order: "<name>.weight", "<name>.bias".
Result<ModelWeights::LayoutSpec> ParameterLayout(const ModelSpec& spec);

// The parameters the optimizer updates, as [begin, end) offsets into the flat parameter buffer
// (ParameterLayout's order), adjacent ones merged: every parameter but the frozen layers'. One
// range [0, all) when nothing is frozen.
Result<std::vector<std::pair<int64_t, int64_t>>> TrainableRanges(const ModelSpec& spec);

// The indices (into ParameterLayout's tensors) of the tensors of every layer that is not frozen, in
// order: what a run with run.federate = "unfrozen" aggregates and sends.
Result<std::vector<uint32_t>> UnfrozenTensors(const ModelSpec& spec);

// Initial weights as PyTorch initializes its modules: nn.Linear's and nn.Conv2d's weights and
// biases from U(-1/sqrt(fan_in), 1/sqrt(fan_in)), norms' gamma 1 and beta 0, nn.Embedding's table
// from N(0, 1). Deterministic for a seed.
Result<ModelWeights> InitWeights(const ModelSpec& spec, uint64_t seed);

// Multiply-add FLOPs (2 per MAC) of one training step per sample: forward, backward to the
// weights, and backward to the inputs of every layer but the first.
int64_t TrainFlopsPerSample(const ModelSpec& spec);
int64_t ForwardFlopsPerSample(const ModelSpec& spec);

}  // namespace tributary
