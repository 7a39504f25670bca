#include "train/cpu/cpu_engine.h"

#include <algorithm>
#include <cstring>

#include "core/check.h"
#include "train/cpu/conv2d.h"
#include "train/cpu/dense.h"
#include "train/cpu/pointwise.h"
#include "train/cpu/softmax_xent.h"
#include "train/sgd.h"

namespace tributary {

Result<std::unique_ptr<Engine>> CreateCpuEngine(const ModelSpec& spec, int64_t max_batch) {
  TRIB_ASSIGN_OR_RETURN(auto engine, cpu::CpuEngine::Create(spec, max_batch));
  return std::unique_ptr<Engine>(std::move(engine));
}

namespace cpu {

Result<std::unique_ptr<CpuEngine>> CpuEngine::Create(const ModelSpec& spec, int64_t max_batch) {
  if (max_batch <= 0 || max_batch > (1 << 20))
    return Status::InvalidArgument("max_batch must be in [1, 2^20], got " +
                                   std::to_string(max_batch));
  TRIB_ASSIGN_OR_RETURN(std::vector<Shape3> shapes, LayerOutputShapes(spec));
  TRIB_ASSIGN_OR_RETURN(ModelWeights::LayoutSpec layout, ParameterLayout(spec));
  TRIB_ASSIGN_OR_RETURN(ModelWeights proto, ModelWeights::Create(layout));
  std::unique_ptr<CpuEngine> e(new CpuEngine());
  e->spec_ = spec;
  e->max_batch_ = max_batch;
  e->fingerprint_ = proto.fingerprint();
  Shape3 in = spec.input;
  int64_t max_act = in.numel();
  for (size_t i = 0; i < spec.layers.size(); ++i) {
    const LayerSpec& l = spec.layers[i];
    std::unique_ptr<CpuLayer> layer;
    switch (l.kind) {
      case LayerKind::kDense:
        layer = std::make_unique<Dense>(in.numel(), l.out_features);
        break;
      case LayerKind::kConv2D:
        layer = std::make_unique<Conv2D>(in.h, in.w, in.c, l.out_channels, l.kernel, l.padding,
                                         max_batch);
        break;
      case LayerKind::kMaxPool2D:
        layer = std::make_unique<MaxPool2D>(in.h, in.w, in.c, l.kernel, max_batch);
        break;
      case LayerKind::kReLU:
        layer = std::make_unique<ReLU>(in.numel());
        break;
      case LayerKind::kFlatten:
        layer = std::make_unique<Flatten>();
        break;
    }
    e->layers_.push_back(std::move(layer));
    e->out_sizes_.push_back(shapes[i].numel());
    max_act = std::max(max_act, shapes[i].numel());
    in = shapes[i];
  }
  const size_t n_params = proto.size();
  e->params_.assign(n_params, 0.0f);
  e->grads_.assign(n_params, 0.0f);
  e->velocity_.assign(n_params, 0.0f);
  e->anchor_.assign(n_params, 0.0f);
  size_t offset = 0;
  for (auto& layer : e->layers_) {
    layer->Bind(e->params_.data() + offset, e->grads_.data() + offset);
    offset += static_cast<size_t>(layer->num_params());
  }
  TRIB_CHECK_EQ(offset, n_params, "layer parameter counts disagree with ParameterLayout");

  e->acts_.resize(spec.layers.size() + 1);
  e->act_ptr_.resize(spec.layers.size() + 1);
  e->acts_[0].resize(static_cast<size_t>(max_batch * spec.input.numel()));
  e->act_ptr_[0] = e->acts_[0].data();
  for (size_t i = 0; i < e->layers_.size(); ++i) {
    if (e->layers_[i]->is_identity()) {
      e->act_ptr_[i + 1] = e->act_ptr_[i];
    } else {
      e->acts_[i + 1].resize(static_cast<size_t>(max_batch * e->out_sizes_[i]));
      e->act_ptr_[i + 1] = e->acts_[i + 1].data();
    }
  }
  e->first_layer_ = 0;
  while (e->first_layer_ + 1 < e->layers_.size() && e->layers_[e->first_layer_]->is_identity())
    ++e->first_layer_;
  e->grad_a_.resize(static_cast<size_t>(max_batch * max_act));
  e->grad_b_.resize(static_cast<size_t>(max_batch * max_act));
  return e;
}

Status CpuEngine::LoadWeights(const ModelWeights& weights) {
  if (weights.fingerprint() != fingerprint_ || weights.size() != params_.size())
    return Status::InvalidArgument("weights do not match the layout of model " + spec_.name);
  std::copy(weights.data().begin(), weights.data().end(), params_.begin());
  std::copy(params_.begin(), params_.end(), anchor_.begin());
  std::fill(velocity_.begin(), velocity_.end(), 0.0f);
  return Status::Ok();
}

Status CpuEngine::StoreWeights(ModelWeights* out) {
  if (out->fingerprint() != fingerprint_ || out->size() != params_.size())
    return Status::InvalidArgument("output weights do not match the layout of model " + spec_.name);
  std::copy(params_.begin(), params_.end(), out->data().begin());
  return Status::Ok();
}

StepStats CpuEngine::Forward(const Dataset& data, std::span<const uint32_t> batch, bool need_grad) {
  const int64_t n = static_cast<int64_t>(batch.size());
  TRIB_CHECK(n >= 1 && n <= max_batch_, "batch size out of range");
  TRIB_CHECK_EQ(data.sample_size(), spec_.input.numel(),
                "dataset sample shape does not match the model");
  const int64_t ss = data.sample_size();
  float* x = act_ptr_[0];
  labels_.resize(batch.size());
  uint8_t* labels = labels_.data();
  for (int64_t i = 0; i < n; ++i) {
    TRIB_CHECK(batch[i] < data.labels.size(), "sample index out of range");
    std::memcpy(x + i * ss, data.image(batch[i]), sizeof(float) * ss);
    labels[i] = data.labels[batch[i]];
  }
  for (size_t i = 0; i < layers_.size(); ++i)
    if (!layers_[i]->is_identity()) layers_[i]->Forward(act_ptr_[i], act_ptr_[i + 1], n);
  const int64_t k = spec_.num_classes;
  return SoftmaxCrossEntropy(act_ptr_.back(), labels, n, k, need_grad ? grad_a_.data() : nullptr);
}

StepStats CpuEngine::ComputeGradients(const Dataset& data, std::span<const uint32_t> batch) {
  StepStats st = Forward(data, batch, /*need_grad=*/true);
  const int64_t n = static_cast<int64_t>(batch.size());
  float* g_out = grad_a_.data();
  float* g_in = grad_b_.data();
  for (size_t i = layers_.size(); i-- > 0;) {
    CpuLayer& layer = *layers_[i];
    if (layer.is_identity()) continue;
    // Nothing upstream of the first computing layer needs a gradient (it would be the input's).
    const bool first = (i == first_layer_);
    layer.Backward(act_ptr_[i], act_ptr_[i + 1], g_out, first ? nullptr : g_in, n);
    std::swap(g_out, g_in);
  }
  return st;
}

StepStats CpuEngine::TrainStep(const Dataset& data, std::span<const uint32_t> batch,
                               const SgdConfig& cfg) {
  StepStats st = ComputeGradients(data, batch);
  SgdUpdate(params_.data(), grads_.data(), velocity_.data(), anchor_.data(), params_.size(), cfg);
  return st;
}

StepStats CpuEngine::EvalStep(const Dataset& data, std::span<const uint32_t> batch) {
  return Forward(data, batch, /*need_grad=*/false);
}

}  // namespace cpu
}  // namespace tributary
