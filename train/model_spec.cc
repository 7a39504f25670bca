#include "train/model_spec.h"

#include "train/depthwise_math.h"

#include <cmath>

#include "core/rng.h"
#include "train/model_file.h"

namespace tributary {
namespace {

// The zoo, as model files (train/model_file.h). They leave out `input` and `classes`, and the last
// layer's units, so ModelSpecByName's arguments fill them in. Unnamed layers get the default tensor
// names (fc1, fc2, ... and conv1, conv2, ...) that checkpoints and exported models already use.
struct ZooEntry {
  std::string_view name;
  std::string_view toml;
};

constexpr ZooEntry kZoo[] = {
    {"mlp", R"(# The FedAvg paper's 2NN: 784-200-200-10 on Fashion-MNIST.
name = "mlp"
cut = 3
layers = [
  { type = "flatten" },
  { type = "dense", units = 200 },
  { type = "relu" },
  { type = "dense", units = 200 },
  { type = "relu" },
  { type = "dense" },
]
)"},
    {"cnn",
     R"(# The FedAvg paper's CNN: two 5x5 "same" convolutions with 2x2 max pooling, dense 512.
name = "cnn"
cut = 3
layers = [
  { type = "conv2d", filters = 32, kernel = 5, padding = 2 },
  { type = "relu" },
  { type = "maxpool2d", size = 2 },
  { type = "conv2d", filters = 64, kernel = 5, padding = 2 },
  { type = "relu" },
  { type = "maxpool2d", size = 2 },
  { type = "flatten" },
  { type = "dense", units = 512 },
  { type = "relu" },
  { type = "dense" },
]
)"},
    {"lenet",
     R"(# LeNet-5 with ReLU and max pooling: conv 5x5x6 (pad 2), conv 5x5x16, dense 120, 84.
name = "lenet"
cut = 3
layers = [
  { type = "conv2d", filters = 6, kernel = 5, padding = 2 },
  { type = "relu" },
  { type = "maxpool2d", size = 2 },
  { type = "conv2d", filters = 16, kernel = 5 },
  { type = "relu" },
  { type = "maxpool2d", size = 2 },
  { type = "flatten" },
  { type = "dense", units = 120 },
  { type = "relu" },
  { type = "dense", units = 84 },
  { type = "relu" },
  { type = "dense" },
]
)"},
};

std::string ShapeText(const Shape3& s) {
  return std::to_string(s.h) + "x" + std::to_string(s.w) + "x" + std::to_string(s.c);
}

// fan_in of a parameterized layer given its input shape.
int64_t FanIn(const LayerSpec& l, const Shape3& in) {
  if (l.kind == LayerKind::kDense) return in.numel();
  if (l.kind == LayerKind::kDepthwiseConv2D) return l.kernel * l.kernel;
  return ConvTapsOf(l, in).taps();
}

// Multiply-adds of one sample's forward through layer `l` (input `in`, output `out`): its GEMMs'.
int64_t ForwardMacs(const LayerSpec& l, const Shape3& in, const Shape3& out) {
  if (HasWeightMatrix(l.kind)) return out.numel() * FanIn(l, in);
  if (IsRecurrent(l.kind))  // each step: x W_ih^T and h W_hh^T
    return in.h * GatesPerUnit(l.kind) * l.out_features * (in.w * in.c + l.out_features);
  return 0;
}

}  // namespace

ConvTaps ConvTapsOf(const LayerSpec& l, const Shape3& in) {
  if (l.kind == LayerKind::kConv1D)
    return ConvTaps{in.h, 1, in.w * in.c, l.kernel, 1, l.padding, 0};
  return ConvTaps{in.h, in.w, in.c, l.kernel, l.kernel, l.padding, l.padding};
}

std::string_view LayerKindName(LayerKind kind) {
  switch (kind) {
    case LayerKind::kDense:
      return "Dense";
    case LayerKind::kConv2D:
      return "Conv2D";
    case LayerKind::kMaxPool2D:
      return "MaxPool2D";
    case LayerKind::kReLU:
      return "ReLU";
    case LayerKind::kFlatten:
      return "Flatten";
    case LayerKind::kSigmoid:
      return "Sigmoid";
    case LayerKind::kTanh:
      return "Tanh";
    case LayerKind::kGelu:
      return "GELU";
    case LayerKind::kAvgPool2D:
      return "AvgPool2D";
    case LayerKind::kGlobalAvgPool:
      return "GlobalAvgPool";
    case LayerKind::kGroupNorm:
      return "GroupNorm";
    case LayerKind::kLayerNorm:
      return "LayerNorm";
    case LayerKind::kConv1D:
      return "Conv1D";
    case LayerKind::kDepthwiseConv2D:
      return "DepthwiseConv2D";
    case LayerKind::kEmbedding:
      return "Embedding";
    case LayerKind::kLstm:
      return "LSTM";
    case LayerKind::kGru:
      return "GRU";
    case LayerKind::kDropout:
      return "Dropout";
    case LayerKind::kAdd:
      return "Add";
  }
  return "?";
}

std::vector<std::string> ModelNames() {
  std::vector<std::string> names;
  for (const ZooEntry& e : kZoo) names.emplace_back(e.name);
  return names;
}

Result<ModelSpec> ModelSpecByName(std::string_view name, Shape3 input, int num_classes) {
  for (const ZooEntry& e : kZoo) {
    if (e.name == name)
      return ParseModelToml(e.toml, "built-in model '" + std::string(name) + "'", input,
                            num_classes);
  }
  return Status::InvalidArgument("unknown model '" + std::string(name) +
                                 "'; known models: mlp, cnn, lenet");
}

int64_t SequencePositions(const ModelSpec& spec) {
  if (spec.layers.empty() || spec.layers[0].kind != LayerKind::kEmbedding || spec.layers[0].pad < 0)
    return 0;
  return spec.input.numel();
}

Result<std::vector<Shape3>> LayerOutputShapes(const ModelSpec& spec) {
  std::vector<Shape3> out;
  Shape3 cur = spec.input;
  if (cur.numel() <= 0)
    return Status::InvalidArgument("model " + spec.name + ": input " + ShapeText(cur) +
                                   " is empty");
  for (size_t i = 0; i < spec.layers.size(); ++i) {
    const LayerSpec& l = spec.layers[i];
    auto bad = [&](const std::string& why) {
      return Status::InvalidArgument("model " + spec.name + ": layer " + std::to_string(i) + " (" +
                                     std::string(LayerKindName(l.kind)) + "): " + why);
    };
    switch (l.kind) {
      case LayerKind::kDense:
        if (l.out_features <= 0) return bad("needs out_features > 0");
        cur = {1, 1, l.out_features};
        break;
      case LayerKind::kConv2D:
      case LayerKind::kConv1D: {
        if (l.out_channels <= 0 || l.kernel <= 0 || l.padding < 0)
          return bad("has a bad configuration");
        const ConvTaps g = ConvTapsOf(l, cur);
        if (g.oh() <= 0 || g.ow() <= 0)
          return bad("kernel " + std::to_string(l.kernel) + " is larger than its input " +
                     ShapeText(cur) + " padded by " + std::to_string(l.padding) +
                     (l.kind == LayerKind::kConv1D
                          ? " (a sequence of its " + std::to_string(cur.h) + " rows)"
                          : std::string()));
        cur = {g.oh(), g.ow(), l.out_channels};
        break;
      }
      case LayerKind::kDepthwiseConv2D: {
        if (l.kernel <= 0 || l.padding < 0) return bad("has a bad configuration");
        const DepthwiseGeometry g{cur.h, cur.w, cur.c, l.kernel, l.padding};
        if (g.oh() <= 0 || g.ow() <= 0)
          return bad("kernel " + std::to_string(l.kernel) + " is larger than its input " +
                     ShapeText(cur) + " padded by " + std::to_string(l.padding));
        cur = {g.oh(), g.ow(), cur.c};
        break;
      }
      case LayerKind::kMaxPool2D:
      case LayerKind::kAvgPool2D:
        if (l.kernel <= 0 || cur.h < l.kernel || cur.w < l.kernel)
          return bad("window " + std::to_string(l.kernel) + " does not fit its input " +
                     ShapeText(cur));
        cur = {cur.h / l.kernel, cur.w / l.kernel, cur.c};
        break;
      case LayerKind::kReLU:
      case LayerKind::kSigmoid:
      case LayerKind::kTanh:
      case LayerKind::kGelu:
        break;
      case LayerKind::kDropout:
        if (!(l.rate >= 0.0f && l.rate < 1.0f))
          return bad("rate " + std::to_string(l.rate) + " must be in [0, 1)");
        break;
      case LayerKind::kFlatten:
        cur = {1, 1, cur.numel()};
        break;
      case LayerKind::kAdd:
        if (l.from < 0 || l.from >= static_cast<int64_t>(i))
          return bad("from = " + std::to_string(l.from) + " must name an earlier layer (0 to " +
                     std::to_string(static_cast<int64_t>(i) - 1) + ")");
        if (!(out[static_cast<size_t>(l.from)] == cur))
          return bad("adds layer " + std::to_string(l.from) + "'s output (" +
                     ShapeText(out[static_cast<size_t>(l.from)]) + ") to an input of " +
                     ShapeText(cur) + ": the shapes must be equal");
        break;
      case LayerKind::kGlobalAvgPool:
        cur = {1, 1, cur.c};
        break;
      case LayerKind::kGroupNorm:
        if (l.groups <= 0 || cur.c % l.groups != 0)
          return bad("groups " + std::to_string(l.groups) + " must divide its input's " +
                     std::to_string(cur.c) + " channels (" + ShapeText(cur) + ")");
        break;
      case LayerKind::kLayerNorm:
        break;
      case LayerKind::kEmbedding:
        if (i != 0) return bad("must be the first layer (its input is token ids)");
        if (l.vocab <= 0 || l.out_features <= 0) return bad("needs vocab > 0 and dim > 0");
        if (l.pad >= l.vocab)
          return bad("pad = " + std::to_string(l.pad) + " is not a token id (0 to " +
                     std::to_string(l.vocab - 1) + ")");
        cur = {cur.numel(), 1, l.out_features};  // a sequence: one vector per token
        break;
      case LayerKind::kLstm:
      case LayerKind::kGru:
        if (l.out_features <= 0) return bad("needs units > 0");
        if (const int64_t tokens = SequencePositions(spec); tokens > 0 && cur.h != tokens)
          return bad("reads " + std::to_string(cur.h) +
                     " steps, but the embedding's pad gives "
                     "lengths of its " +
                     std::to_string(tokens) + " positions: keep the steps");
        cur = {l.return_sequences ? cur.h : 1, 1, l.out_features};
        break;
    }
    out.push_back(cur);
  }
  if (out.empty()) return Status::InvalidArgument("model " + spec.name + " has no layers");
  if (spec.num_classes != 0 && out.back().numel() != spec.num_classes)
    return Status::InvalidArgument(
        "model " + spec.name + ": last layer must produce " + std::to_string(spec.num_classes) +
        " logits (one per class), not " + std::to_string(out.back().numel()) + " (" +
        ShapeText(out.back()) + ")");
  return out;
}

Result<ModelWeights::LayoutSpec> ParameterLayout(const ModelSpec& spec) {
  TRIB_ASSIGN_OR_RETURN(std::vector<Shape3> shapes, LayerOutputShapes(spec));
  ModelWeights::LayoutSpec layout;
  Shape3 in = spec.input;
  for (size_t i = 0; i < spec.layers.size(); ++i) {
    const LayerSpec& l = spec.layers[i];
    if (l.kind == LayerKind::kDense) {
      layout.emplace_back(l.name + ".weight", std::vector<int64_t>{l.out_features, in.numel()});
      layout.emplace_back(l.name + ".bias", std::vector<int64_t>{l.out_features});
    } else if (l.kind == LayerKind::kConv2D) {
      layout.emplace_back(l.name + ".weight",
                          std::vector<int64_t>{l.out_channels, l.kernel, l.kernel, in.c});
      layout.emplace_back(l.name + ".bias", std::vector<int64_t>{l.out_channels});
    } else if (l.kind == LayerKind::kDepthwiseConv2D) {
      layout.emplace_back(l.name + ".weight", std::vector<int64_t>{in.c, l.kernel, l.kernel, 1});
      layout.emplace_back(l.name + ".bias", std::vector<int64_t>{in.c});
    } else if (l.kind == LayerKind::kConv1D) {
      layout.emplace_back(l.name + ".weight",
                          std::vector<int64_t>{l.out_channels, l.kernel, ConvTapsOf(l, in).c});
      layout.emplace_back(l.name + ".bias", std::vector<int64_t>{l.out_channels});
    } else if (IsNorm(l.kind)) {
      layout.emplace_back(l.name + ".weight", std::vector<int64_t>{in.c});
      layout.emplace_back(l.name + ".bias", std::vector<int64_t>{in.c});
    } else if (l.kind == LayerKind::kEmbedding) {
      layout.emplace_back(l.name + ".weight", std::vector<int64_t>{l.vocab, l.out_features});
    } else if (IsRecurrent(l.kind)) {
      // PyTorch's nn.LSTM and nn.GRU names (one layer: _l0), the gates' rows in PyTorch's order
      // (LSTM: i, f, g, o; GRU: r, z, n).
      const int64_t gates = GatesPerUnit(l.kind) * l.out_features;
      layout.emplace_back(l.name + ".weight_ih_l0", std::vector<int64_t>{gates, in.w * in.c});
      layout.emplace_back(l.name + ".weight_hh_l0", std::vector<int64_t>{gates, l.out_features});
      layout.emplace_back(l.name + ".bias_ih_l0", std::vector<int64_t>{gates});
      layout.emplace_back(l.name + ".bias_hh_l0", std::vector<int64_t>{gates});
    }
    in = shapes[i];
  }
  return layout;
}

Result<std::vector<std::pair<int64_t, int64_t>>> TrainableRanges(const ModelSpec& spec) {
  TRIB_ASSIGN_OR_RETURN(ModelWeights::LayoutSpec layout, ParameterLayout(spec));
  // ParameterLayout lists each layer's ParameterTensorCount tensors, in layer order.
  std::vector<std::pair<int64_t, int64_t>> ranges;
  size_t t = 0;
  int64_t offset = 0;
  for (const LayerSpec& l : spec.layers) {
    const int tensors = ParameterTensorCount(l.kind);
    if (tensors == 0) continue;
    int64_t size = 0;
    for (int k = 0; k < tensors; ++k, ++t) {
      int64_t numel = 1;
      for (int64_t d : layout[t].second) numel *= d;
      size += numel;
    }
    if (!l.frozen) {
      if (!ranges.empty() && ranges.back().second == offset)
        ranges.back().second += size;
      else
        ranges.emplace_back(offset, offset + size);
    }
    offset += size;
  }
  return ranges;
}

Result<std::vector<uint32_t>> UnfrozenTensors(const ModelSpec& spec) {
  TRIB_RETURN_IF_ERROR(ParameterLayout(spec).status());  // the spec's shapes fit
  std::vector<uint32_t> out;
  uint32_t t = 0;
  for (const LayerSpec& l : spec.layers)
    for (int k = 0; k < ParameterTensorCount(l.kind); ++k, ++t)
      if (!l.frozen) out.push_back(t);
  return out;
}

Result<ModelWeights> InitWeights(const ModelSpec& spec, uint64_t seed) {
  TRIB_ASSIGN_OR_RETURN(ModelWeights::LayoutSpec layout, ParameterLayout(spec));
  TRIB_ASSIGN_OR_RETURN(ModelWeights w, ModelWeights::Create(layout));
  TRIB_ASSIGN_OR_RETURN(std::vector<Shape3> shapes, LayerOutputShapes(spec));
  Rng rng(DeriveSeed(seed, {0x1417}));
  size_t t = 0;
  Shape3 in = spec.input;
  for (size_t i = 0; i < spec.layers.size(); ++i) {
    const LayerSpec& l = spec.layers[i];
    if (HasWeightMatrix(l.kind)) {
      const float bound = 1.0f / std::sqrt(static_cast<float>(FanIn(l, in)));
      for (size_t k = 0; k < 2; ++k, ++t)
        for (float& v : w.tensor(t)) v = (2.0f * rng.UniformFloat() - 1.0f) * bound;
    } else if (IsNorm(l.kind)) {
      // PyTorch's start: gamma 1, beta 0 (no draw, so other layers' weights do not move).
      for (float& v : w.tensor(t++)) v = 1.0f;
      for (float& v : w.tensor(t++)) v = 0.0f;
    } else if (l.kind == LayerKind::kEmbedding) {
      // PyTorch's nn.Embedding: N(0, 1).
      for (float& v : w.tensor(t++)) v = static_cast<float>(rng.Normal());
    } else if (IsRecurrent(l.kind)) {
      // PyTorch's nn.LSTM and nn.GRU: every tensor from U(-1/sqrt(units), 1/sqrt(units)).
      const float bound = 1.0f / std::sqrt(static_cast<float>(l.out_features));
      for (int k = 0; k < ParameterTensorCount(l.kind); ++k, ++t)
        for (float& v : w.tensor(t)) v = (2.0f * rng.UniformFloat() - 1.0f) * bound;
    }
    in = shapes[i];
  }
  return w;
}

int64_t ForwardFlopsPerSample(const ModelSpec& spec) {
  auto shapes = LayerOutputShapes(spec);
  if (!shapes.ok()) return 0;
  int64_t flops = 0;
  Shape3 in = spec.input;
  for (size_t i = 0; i < spec.layers.size(); ++i) {
    const LayerSpec& l = spec.layers[i];
    const Shape3& out = (*shapes)[i];
    flops += 2 * ForwardMacs(l, in, out);
    in = out;
  }
  return flops;
}

int64_t TrainFlopsPerSample(const ModelSpec& spec) {
  auto shapes = LayerOutputShapes(spec);
  if (!shapes.ok()) return 0;
  int64_t flops = 0;
  Shape3 in = spec.input;
  bool first = true;
  for (size_t i = 0; i < spec.layers.size(); ++i) {
    const LayerSpec& l = spec.layers[i];
    const Shape3& out = (*shapes)[i];
    if (const int64_t macs = ForwardMacs(l, in, out); macs > 0) {
      flops += 2 * macs * (first ? 2 : 3);  // forward, weight grad, and input grad after the first
      first = false;
    }
    in = out;
  }
  return flops;
}

}  // namespace tributary
