#include "train/model_spec.h"

#include <cmath>

#include "core/rng.h"

namespace tributary {
namespace {

LayerSpec Dense(int64_t out, std::string name) {
  LayerSpec l;
  l.kind = LayerKind::kDense;
  l.out_features = out;
  l.name = std::move(name);
  return l;
}
LayerSpec Conv(int64_t out, int64_t k, int64_t pad, std::string name) {
  LayerSpec l;
  l.kind = LayerKind::kConv2D;
  l.out_channels = out;
  l.kernel = k;
  l.padding = pad;
  l.name = std::move(name);
  return l;
}
LayerSpec Pool(int64_t k) {
  LayerSpec l;
  l.kind = LayerKind::kMaxPool2D;
  l.kernel = k;
  return l;
}
LayerSpec Simple(LayerKind kind) {
  LayerSpec l;
  l.kind = kind;
  return l;
}

// fan_in of a parameterized layer given its input shape.
int64_t FanIn(const LayerSpec& l, const Shape3& in) {
  return l.kind == LayerKind::kDense ? in.numel() : l.kernel * l.kernel * in.c;
}

}  // namespace

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
  }
  return "?";
}

std::vector<std::string> ModelNames() { return {"mlp", "cnn", "lenet"}; }

Result<ModelSpec> ModelSpecByName(std::string_view name, Shape3 input, int num_classes) {
  ModelSpec s;
  s.name = std::string(name);
  s.input = input;
  s.num_classes = num_classes;
  const auto relu = Simple(LayerKind::kReLU);
  if (name == "mlp") {
    s.layers = {Simple(LayerKind::kFlatten), Dense(200, "fc1"), relu, Dense(200, "fc2"), relu,
                Dense(num_classes, "fc3")};
  } else if (name == "cnn") {
    s.layers = {Conv(32, 5, 2, "conv1"),
                relu,
                Pool(2),
                Conv(64, 5, 2, "conv2"),
                relu,
                Pool(2),
                Simple(LayerKind::kFlatten),
                Dense(512, "fc1"),
                relu,
                Dense(num_classes, "fc2")};
  } else if (name == "lenet") {
    s.layers = {Conv(6, 5, 2, "conv1"),
                relu,
                Pool(2),
                Conv(16, 5, 0, "conv2"),
                relu,
                Pool(2),
                Simple(LayerKind::kFlatten),
                Dense(120, "fc1"),
                relu,
                Dense(84, "fc2"),
                relu,
                Dense(num_classes, "fc3")};
  } else {
    return Status::InvalidArgument("unknown model '" + std::string(name) +
                                   "'; known models: mlp, cnn, lenet");
  }
  TRIB_RETURN_IF_ERROR(LayerOutputShapes(s).status());
  return s;
}

Result<std::vector<Shape3>> LayerOutputShapes(const ModelSpec& spec) {
  std::vector<Shape3> out;
  Shape3 cur = spec.input;
  if (cur.numel() <= 0)
    return Status::InvalidArgument("model " + spec.name + ": input shape is empty");
  for (size_t i = 0; i < spec.layers.size(); ++i) {
    const LayerSpec& l = spec.layers[i];
    auto bad = [&](const std::string& why) {
      return Status::InvalidArgument("model " + spec.name + ": layer " + std::to_string(i) + " (" +
                                     std::string(LayerKindName(l.kind)) + ") " + why);
    };
    switch (l.kind) {
      case LayerKind::kDense:
        if (l.out_features <= 0) return bad("needs out_features > 0");
        cur = {1, 1, l.out_features};
        break;
      case LayerKind::kConv2D: {
        if (l.out_channels <= 0 || l.kernel <= 0 || l.padding < 0)
          return bad("has a bad configuration");
        const int64_t oh = cur.h + 2 * l.padding - l.kernel + 1,
                      ow = cur.w + 2 * l.padding - l.kernel + 1;
        if (oh <= 0 || ow <= 0) return bad("kernel is larger than its padded input");
        cur = {oh, ow, l.out_channels};
        break;
      }
      case LayerKind::kMaxPool2D:
        if (l.kernel <= 0 || cur.h < l.kernel || cur.w < l.kernel)
          return bad("window does not fit its input");
        cur = {cur.h / l.kernel, cur.w / l.kernel, cur.c};
        break;
      case LayerKind::kReLU:
        break;
      case LayerKind::kFlatten:
        cur = {1, 1, cur.numel()};
        break;
    }
    out.push_back(cur);
  }
  if (out.empty() || out.back().numel() != spec.num_classes)
    return Status::InvalidArgument("model " + spec.name + ": last layer must produce " +
                                   std::to_string(spec.num_classes) + " logits");
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
    }
    in = shapes[i];
  }
  return layout;
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
    if (l.kind == LayerKind::kDense || l.kind == LayerKind::kConv2D) {
      const float bound = 1.0f / std::sqrt(static_cast<float>(FanIn(l, in)));
      for (size_t k = 0; k < 2; ++k, ++t)
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
    if (l.kind == LayerKind::kDense || l.kind == LayerKind::kConv2D)
      flops += 2 * out.numel() * FanIn(l, in);
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
    if (l.kind == LayerKind::kDense || l.kind == LayerKind::kConv2D) {
      const int64_t macs = out.numel() * FanIn(l, in);
      flops += 2 * macs * (first ? 2 : 3);  // forward, weight grad, and input grad after the first
      first = false;
    }
    in = out;
  }
  return flops;
}

}  // namespace tributary
