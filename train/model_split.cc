#include "train/model_split.h"

#include <algorithm>
#include <string>

namespace tributary {
namespace {

// A part with a layer that mixes its inputs (an Embedding alone only looks its tokens up, which
// reveals them as the raw inputs would).
bool HasParameters(const ModelSpec& spec) {
  return std::any_of(spec.layers.begin(), spec.layers.end(), [](const LayerSpec& l) {
    return HasWeightMatrix(l.kind) || IsRecurrent(l.kind);
  });
}

}  // namespace

Result<SplitModel> CutModel(const ModelSpec& whole, size_t cut) {
  TRIB_ASSIGN_OR_RETURN(std::vector<Shape3> shapes, LayerOutputShapes(whole));
  if (whole.layers.size() < 2)
    return Status::InvalidArgument("model " + whole.name +
                                   ": a cut needs a layer on each side, and it has one");
  if (cut < 1 || cut >= whole.layers.size())
    return Status::InvalidArgument("model " + whole.name + ": the cut must be in [1, " +
                                   std::to_string(whole.layers.size() - 1) +
                                   "] (the device part holds layers 0 .. cut-1), got " +
                                   std::to_string(cut));
  SplitModel s;
  s.whole = whole;
  s.cut = cut;
  s.cut_shape = shapes[cut - 1];
  s.device.name = whole.name + "[:" + std::to_string(cut) + "]";
  s.device.input = whole.input;
  s.device.num_classes = 0;
  s.device.layers.assign(whole.layers.begin(), whole.layers.begin() + static_cast<ptrdiff_t>(cut));
  s.server.name = whole.name + "[" + std::to_string(cut) + ":]";
  s.server.input = s.cut_shape;
  s.server.num_classes = whole.num_classes;
  s.server.loss = whole.loss;  // the server part computes the loss
  s.server.layers.assign(whole.layers.begin() + static_cast<ptrdiff_t>(cut), whole.layers.end());
  if (!HasParameters(s.device))
    return Status::InvalidArgument("model " + whole.name + ": a cut at layer " +
                                   std::to_string(cut) +
                                   " leaves the device part without parameters (it would send its "
                                   "raw inputs); cut after the first dense or conv2d layer");
  if (!HasParameters(s.server))
    return Status::InvalidArgument("model " + whole.name + ": a cut at layer " +
                                   std::to_string(cut) +
                                   " leaves the server part without parameters");
  TRIB_ASSIGN_OR_RETURN(ModelWeights::LayoutSpec dl, ParameterLayout(s.device));
  TRIB_ASSIGN_OR_RETURN(ModelWeights::LayoutSpec sl, ParameterLayout(s.server));
  TRIB_ASSIGN_OR_RETURN(ModelWeights d, ModelWeights::Create(dl));
  TRIB_ASSIGN_OR_RETURN(ModelWeights sv, ModelWeights::Create(sl));
  s.device_params = d.size();
  s.server_params = sv.size();
  return s;
}

Result<std::pair<ModelWeights, ModelWeights>> SplitWeights(const SplitModel& split,
                                                           const ModelWeights& whole) {
  TRIB_ASSIGN_OR_RETURN(ModelWeights::LayoutSpec wl, ParameterLayout(split.whole));
  TRIB_ASSIGN_OR_RETURN(ModelWeights proto, ModelWeights::Create(wl));
  if (!whole.same_layout(proto))
    return Status::InvalidArgument("weights do not have the layout of model " + split.whole.name);
  TRIB_ASSIGN_OR_RETURN(ModelWeights::LayoutSpec dl, ParameterLayout(split.device));
  TRIB_ASSIGN_OR_RETURN(ModelWeights::LayoutSpec sl, ParameterLayout(split.server));
  TRIB_ASSIGN_OR_RETURN(ModelWeights d, ModelWeights::Create(dl));
  TRIB_ASSIGN_OR_RETURN(ModelWeights s, ModelWeights::Create(sl));
  const auto all = whole.data();
  std::copy(all.begin(), all.begin() + static_cast<ptrdiff_t>(d.size()), d.data().begin());
  std::copy(all.begin() + static_cast<ptrdiff_t>(d.size()), all.end(), s.data().begin());
  return std::make_pair(std::move(d), std::move(s));
}

Result<ModelWeights> JoinWeights(const SplitModel& split, const ModelWeights& device,
                                 const ModelWeights& server) {
  TRIB_ASSIGN_OR_RETURN(ModelWeights::LayoutSpec wl, ParameterLayout(split.whole));
  TRIB_ASSIGN_OR_RETURN(ModelWeights whole, ModelWeights::Create(wl));
  if (device.size() != split.device_params || server.size() != split.server_params)
    return Status::InvalidArgument(
        "the parts of model " + split.whole.name + " hold " + std::to_string(device.size()) +
        " and " + std::to_string(server.size()) + " values; its cut at layer " +
        std::to_string(split.cut) + " has " + std::to_string(split.device_params) + " and " +
        std::to_string(split.server_params));
  auto out = whole.data();
  std::copy(device.data().begin(), device.data().end(), out.begin());
  std::copy(server.data().begin(), server.data().end(),
            out.begin() + static_cast<ptrdiff_t>(device.size()));
  return whole;
}

SplitFlops SplitTrainFlopsPerSample(const SplitModel& split) {
  SplitFlops f;
  f.device = TrainFlopsPerSample(split.device);
  f.server = TrainFlopsPerSample(split.server);
  // The server part's first parameterized layer also computes its input gradient (sent back, or
  // passed down to the cut): one more GEMM of its forward's size.
  Shape3 in = split.server.input;
  auto shapes = LayerOutputShapes(split.server);
  if (!shapes.ok()) return f;
  for (size_t i = 0; i < split.server.layers.size(); ++i) {
    const LayerSpec& l = split.server.layers[i];
    if (HasWeightMatrix(l.kind)) {
      const int64_t fan_in = l.kind == LayerKind::kDense ? in.numel() : ConvTapsOf(l, in).taps();
      f.server += 2 * (*shapes)[i].numel() * fan_in;
      break;
    }
    in = (*shapes)[i];
  }
  return f;
}

}  // namespace tributary
