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

Result<SplitModel> CutModel(const ModelSpec& whole, size_t cut, size_t head) {
  TRIB_ASSIGN_OR_RETURN(std::vector<Shape3> shapes, LayerOutputShapes(whole));
  const size_t layers = whole.layers.size();
  if (layers < 2)
    return Status::InvalidArgument("model " + whole.name +
                                   ": a cut needs a layer on each side, and it has one");
  if (cut < 1 || cut >= layers)
    return Status::InvalidArgument(
        "model " + whole.name + ": the cut must be in [1, " + std::to_string(layers - 1) +
        "] (the device part holds layers 0 .. cut-1), got " + std::to_string(cut));
  if (head != 0 && (head <= cut || head >= layers))
    return Status::InvalidArgument("model " + whole.name + ": the head's cut must be in [" +
                                   std::to_string(cut + 1) + ", " + std::to_string(layers - 1) +
                                   "] (after the cut at " + std::to_string(cut) +
                                   "; the device's head holds layers head .. " +
                                   std::to_string(layers - 1) + "), got " + std::to_string(head));
  // A part's dropout masks would be keyed by that part's own steps, so the parts together would
  // not drop what the whole model drops (nor what the same run drops on another schedule).
  if (SequencePositions(whole) > 0)
    return Status::InvalidArgument("model " + whole.name +
                                   ": its embedding's pad gives sequence lengths, which split "
                                   "learning does not support yet; leave the pad out");
  for (size_t i = 0; i < layers; ++i)
    if (whole.layers[i].kind == LayerKind::kDropout)
      return Status::InvalidArgument("model " + whole.name + ": layer " + std::to_string(i) +
                                     " is a dropout layer, which split learning does not support "
                                     "yet; leave it out of a split model");
  const auto layer = [&](size_t i) { return whole.layers.begin() + static_cast<ptrdiff_t>(i); };
  const size_t server_end = head != 0 ? head : layers;
  SplitModel s;
  s.whole = whole;
  s.cut = cut;
  s.head_cut = head;
  s.cut_shape = shapes[cut - 1];
  s.device.name = whole.name + "[:" + std::to_string(cut) + "]";
  s.device.input = whole.input;
  s.device.num_classes = 0;
  s.device.layers.assign(layer(0), layer(cut));
  s.server.name = whole.name + "[" + std::to_string(cut) + ":" +
                  (head != 0 ? std::to_string(head) : std::string()) + "]";
  s.server.input = s.cut_shape;
  s.server.num_classes = head != 0 ? 0 : whole.num_classes;
  s.server.loss = whole.loss;  // the part that ends in the logits computes the loss
  s.server.layers.assign(layer(cut), layer(server_end));
  if (head != 0) {
    s.head_shape = shapes[head - 1];
    s.head.name = whole.name + "[" + std::to_string(head) + ":]";
    s.head.input = s.head_shape;
    s.head.num_classes = whole.num_classes;
    s.head.loss = whole.loss;
    s.head.layers.assign(layer(head), layer(layers));
  }
  // A residual connection stays within one part, its `from` counted from the part's first layer.
  const std::pair<ModelSpec*, size_t> parts[] = {{&s.device, 0}, {&s.server, cut}, {&s.head, head}};
  for (const auto& [part, begin] : parts) {
    for (size_t j = 0; j < part->layers.size(); ++j) {
      LayerSpec& l = part->layers[j];
      if (l.kind != LayerKind::kAdd) continue;
      if (static_cast<size_t>(l.from) < begin)
        return Status::InvalidArgument(
            "model " + whole.name + ": layer " + std::to_string(begin + j) + " adds layer " +
            std::to_string(l.from) + "'s output across a cut (at " + std::to_string(begin) +
            "); a residual connection must stay within one part");
      l.from -= static_cast<int64_t>(begin);
    }
  }
  if (!HasParameters(s.device))
    return Status::InvalidArgument("model " + whole.name + ": a cut at layer " +
                                   std::to_string(cut) +
                                   " leaves the device part without parameters (it would send its "
                                   "raw inputs); cut after the first dense or conv2d layer");
  if (!HasParameters(s.server))
    return Status::InvalidArgument(
        "model " + whole.name + ": a cut at layer " + std::to_string(cut) +
        (head != 0 ? " and a head at layer " + std::to_string(head) : std::string()) +
        " leave the server part without parameters");
  if (head != 0 && !HasParameters(s.head))
    return Status::InvalidArgument(
        "model " + whole.name + ": a head at layer " + std::to_string(head) +
        " holds no parameters (the gradient it sends up would be the loss's own, which names "
        "every label); move the head's cut before the last dense layer");
  TRIB_ASSIGN_OR_RETURN(ModelWeights d, ModelWeights::Create(*DeviceLayout(s)));
  TRIB_ASSIGN_OR_RETURN(ModelWeights::LayoutSpec sl, ParameterLayout(s.server));
  TRIB_ASSIGN_OR_RETURN(ModelWeights sv, ModelWeights::Create(sl));
  s.device_params = d.size();
  s.server_params = sv.size();
  if (head != 0) {
    TRIB_ASSIGN_OR_RETURN(ModelWeights::LayoutSpec hl, ParameterLayout(s.head));
    TRIB_ASSIGN_OR_RETURN(ModelWeights h, ModelWeights::Create(hl));
    s.head_params = h.size();
  }
  return s;
}

Result<ModelWeights::LayoutSpec> DeviceLayout(const SplitModel& split) {
  TRIB_ASSIGN_OR_RETURN(ModelWeights::LayoutSpec layout, ParameterLayout(split.device));
  if (split.u_shaped()) {
    TRIB_ASSIGN_OR_RETURN(ModelWeights::LayoutSpec hl, ParameterLayout(split.head));
    layout.insert(layout.end(), hl.begin(), hl.end());
  }
  return layout;
}

namespace {

// `parts` (each made from its layout) filled from `all`, one after another.
Status Scatter(std::span<const float> all, std::initializer_list<ModelWeights*> parts) {
  size_t at = 0;
  for (ModelWeights* p : parts) {
    if (at + p->size() > all.size()) return Status::InvalidArgument("the parts do not fit");
    std::copy(all.begin() + static_cast<ptrdiff_t>(at),
              all.begin() + static_cast<ptrdiff_t>(at + p->size()), p->data().begin());
    at += p->size();
  }
  return at == all.size() ? Status::Ok() : Status::InvalidArgument("the parts do not fit");
}

// The inverse of Scatter: `parts` one after another into `all`.
void Gather(std::initializer_list<const ModelWeights*> parts, std::span<float> all) {
  size_t at = 0;
  for (const ModelWeights* p : parts) {
    std::copy(p->data().begin(), p->data().end(), all.begin() + static_cast<ptrdiff_t>(at));
    at += p->size();
  }
}

Result<ModelWeights> Empty(const ModelSpec& spec) {
  TRIB_ASSIGN_OR_RETURN(ModelWeights::LayoutSpec l, ParameterLayout(spec));
  return ModelWeights::Create(l);
}

}  // namespace

Result<std::pair<ModelWeights, ModelWeights>> SplitWeights(const SplitModel& split,
                                                           const ModelWeights& whole) {
  TRIB_ASSIGN_OR_RETURN(ModelWeights proto, Empty(split.whole));
  if (!whole.same_layout(proto))
    return Status::InvalidArgument("weights do not have the layout of model " + split.whole.name);
  TRIB_ASSIGN_OR_RETURN(ModelWeights d, ModelWeights::Create(*DeviceLayout(split)));
  TRIB_ASSIGN_OR_RETURN(ModelWeights s, Empty(split.server));
  if (!split.u_shaped()) {
    TRIB_RETURN_IF_ERROR(Scatter(whole.data(), {&d, &s}));
    return std::make_pair(std::move(d), std::move(s));
  }
  TRIB_ASSIGN_OR_RETURN(ModelWeights front, Empty(split.device));
  TRIB_ASSIGN_OR_RETURN(ModelWeights head, Empty(split.head));
  TRIB_RETURN_IF_ERROR(Scatter(whole.data(), {&front, &s, &head}));
  Gather({&front, &head}, d.data());
  return std::make_pair(std::move(d), std::move(s));
}

Result<ModelWeights> JoinWeights(const SplitModel& split, const ModelWeights& device,
                                 const ModelWeights& server) {
  TRIB_ASSIGN_OR_RETURN(ModelWeights whole, Empty(split.whole));
  if (device.size() != split.device_params || server.size() != split.server_params)
    return Status::InvalidArgument(
        "the parts of model " + split.whole.name + " hold " + std::to_string(device.size()) +
        " and " + std::to_string(server.size()) + " values; its cut at layer " +
        std::to_string(split.cut) + " has " + std::to_string(split.device_params) + " and " +
        std::to_string(split.server_params));
  if (!split.u_shaped()) {
    Gather({&device, &server}, whole.data());
    return whole;
  }
  TRIB_ASSIGN_OR_RETURN(auto fh, SplitDeviceWeights(split, device));
  Gather({&fh.first, &server, &fh.second}, whole.data());
  return whole;
}

Result<std::pair<ModelWeights, ModelWeights>> SplitDeviceWeights(const SplitModel& split,
                                                                 const ModelWeights& device) {
  if (!split.u_shaped())
    return Status::FailedPrecondition("model " + split.whole.name + "'s cut has no head");
  TRIB_ASSIGN_OR_RETURN(ModelWeights proto, ModelWeights::Create(*DeviceLayout(split)));
  if (!device.same_layout(proto))
    return Status::InvalidArgument("weights do not have the layout of the device's parts of " +
                                   split.whole.name);
  TRIB_ASSIGN_OR_RETURN(ModelWeights front, Empty(split.device));
  TRIB_ASSIGN_OR_RETURN(ModelWeights head, Empty(split.head));
  TRIB_RETURN_IF_ERROR(Scatter(device.data(), {&front, &head}));
  return std::make_pair(std::move(front), std::move(head));
}

Result<ModelWeights> JoinDeviceWeights(const SplitModel& split, const ModelWeights& front,
                                       const ModelWeights& head) {
  if (!split.u_shaped())
    return Status::FailedPrecondition("model " + split.whole.name + "'s cut has no head");
  TRIB_ASSIGN_OR_RETURN(ModelWeights device, ModelWeights::Create(*DeviceLayout(split)));
  TRIB_ASSIGN_OR_RETURN(ModelWeights f, Empty(split.device));
  TRIB_ASSIGN_OR_RETURN(ModelWeights h, Empty(split.head));
  if (!front.same_layout(f) || !head.same_layout(h))
    return Status::InvalidArgument("the front's or the head's weights do not have their layout (" +
                                   split.device.name + ", " + split.head.name + ")");
  Gather({&front, &head}, device.data());
  return device;
}

namespace {

// The FLOPs of the input gradient of `part`'s first parameterized layer, which a part that is not
// the model's first computes (to send back, or to pass down to its own cut) and
// TrainFlopsPerSample leaves out.
int64_t FirstInputGradientFlops(const ModelSpec& part) {
  Shape3 in = part.input;
  auto shapes = LayerOutputShapes(part);
  if (!shapes.ok()) return 0;
  for (size_t i = 0; i < part.layers.size(); ++i) {
    const LayerSpec& l = part.layers[i];
    if (HasWeightMatrix(l.kind)) {
      const int64_t fan_in = l.kind == LayerKind::kDense ? in.numel() : ConvTapsOf(l, in).taps();
      return 2 * (*shapes)[i].numel() * fan_in;
    }
    in = (*shapes)[i];
  }
  return 0;
}

}  // namespace

SplitFlops SplitTrainFlopsPerSample(const SplitModel& split) {
  SplitFlops f;
  f.device = TrainFlopsPerSample(split.device);
  f.server = TrainFlopsPerSample(split.server) + FirstInputGradientFlops(split.server);
  if (split.u_shaped())
    f.device += TrainFlopsPerSample(split.head) + FirstInputGradientFlops(split.head);
  return f;
}

}  // namespace tributary
