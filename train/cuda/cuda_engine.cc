#include "train/cuda/cuda_engine.h"

#include "core/log.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "core/check.h"
#include "train/cuda/adam_params.h"
#include "train/cuda/cuda_api.h"
#include "train/cuda/kernels.h"
#include "train/cuda/pointwise.h"
#include "train/dropout_math.h"
#include "train/split_checks.h"

namespace tributary {

Result<std::unique_ptr<Engine>> CreateCudaEngine(const ModelSpec& spec, int64_t max_batch,
                                                 int device_index) {
  TRIB_ASSIGN_OR_RETURN(auto engine, cuda::CudaEngine::Create(spec, max_batch, device_index));
  return std::unique_ptr<Engine>(std::move(engine));
}

namespace cuda {

Result<std::unique_ptr<CudaEngine>> CudaEngine::Create(const ModelSpec& spec, int64_t max_batch,
                                                       int device_index) {
  if (max_batch <= 0 || max_batch > (1 << 20))
    return Status::InvalidArgument("max_batch must be in [1, 2^20], got " +
                                   std::to_string(max_batch));
  TRIB_ASSIGN_OR_RETURN(std::vector<Shape3> shapes, LayerOutputShapes(spec));
  TRIB_ASSIGN_OR_RETURN(ModelWeights::LayoutSpec layout, ParameterLayout(spec));
  TRIB_ASSIGN_OR_RETURN(ModelWeights proto, ModelWeights::Create(layout));
  if (spec.num_classes > 256)
    return Status::InvalidArgument("labels are bytes: num_classes must be <= 256");
  std::unique_ptr<CudaEngine> e(new CudaEngine());
  e->spec_ = spec;
  e->positions_ = SequencePositions(spec);
  e->max_batch_ = max_batch;
  e->fingerprint_ = proto.fingerprint();
  e->num_params_ = proto.size();
  TRIB_ASSIGN_OR_RETURN(e->trainable_, TrainableRanges(spec));
  TRIB_ASSIGN_OR_RETURN(e->ctx_, CudaContext::Create(device_index));
  const CudaContext& ctx = *e->ctx_;

  Shape3 in = spec.input;
  int64_t max_act = in.numel();
  for (size_t i = 0; i < spec.layers.size(); ++i) {
    TRIB_ASSIGN_OR_RETURN(auto layer, MakeCudaLayer(spec.layers[i], in, max_batch, ctx));
    e->layers_.push_back(std::move(layer));
    e->out_sizes_.push_back(shapes[i].numel());
    max_act = std::max(max_act, shapes[i].numel());
    in = shapes[i];
  }
  const size_t n = e->num_params_;
  for (DeviceBuffer<float>* b : {&e->params_, &e->grads_, &e->velocity_, &e->anchor_})
    TRIB_RETURN_IF_ERROR(b->Allocate(n));
  CUDA_CHECK(cudaMemsetAsync(e->velocity_.data(), 0, n * sizeof(float), ctx.stream()));
  size_t offset = 0;
  for (auto& layer : e->layers_) {
    layer->Bind(e->params_.data() + offset, e->grads_.data() + offset);
    offset += static_cast<size_t>(layer->num_params());
  }
  TRIB_CHECK_EQ(offset, n, "layer parameter counts disagree with ParameterLayout");

  const size_t num_layers = spec.layers.size();
  e->acts_.resize(num_layers + 1);
  e->act_ptr_.resize(num_layers + 1);
  TRIB_RETURN_IF_ERROR(e->acts_[0].Allocate(static_cast<size_t>(max_batch * spec.input.numel())));
  e->act_ptr_[0] = e->acts_[0].data();
  for (size_t i = 0; i < num_layers; ++i) {
    if (e->layers_[i]->is_identity()) {
      e->act_ptr_[i + 1] = e->act_ptr_[i];
    } else {
      TRIB_RETURN_IF_ERROR(
          e->acts_[i + 1].Allocate(static_cast<size_t>(max_batch * e->out_sizes_[i])));
      e->act_ptr_[i + 1] = e->acts_[i + 1].data();
    }
  }
  // Residual connections: each add layer reads its source layer's output and sends that output
  // its gradient through a buffer per source (act index from + 1), as the CPU engine does.
  e->skip_grads_.resize(num_layers + 1);
  for (size_t i = 0; i < num_layers; ++i) {
    if (spec.layers[i].kind != LayerKind::kAdd) continue;
    const auto src = static_cast<size_t>(spec.layers[i].from) + 1;
    if (e->skip_grads_[src].size() == 0)
      TRIB_RETURN_IF_ERROR(
          e->skip_grads_[src].Allocate(static_cast<size_t>(max_batch * e->out_sizes_[src - 1])));
    static_cast<Add*>(e->layers_[i].get())->Connect(e->act_ptr_[src], e->skip_grads_[src].data());
  }
  while (e->first_layer_ + 1 < num_layers && e->layers_[e->first_layer_]->is_identity())
    ++e->first_layer_;
  TRIB_RETURN_IF_ERROR(e->grad_a_.Allocate(static_cast<size_t>(max_batch * max_act)));
  TRIB_RETURN_IF_ERROR(e->grad_b_.Allocate(static_cast<size_t>(max_batch * max_act)));
  TRIB_RETURN_IF_ERROR(e->batch_idx_.Allocate(static_cast<size_t>(max_batch)));
  TRIB_RETURN_IF_ERROR(e->batch_labels_.Allocate(static_cast<size_t>(max_batch)));
  if (e->positions_ > 0) TRIB_RETURN_IF_ERROR(e->lengths_.Allocate(static_cast<size_t>(max_batch)));
  TRIB_RETURN_IF_ERROR(e->totals_.Allocate(1));
  TRIB_RETURN_IF_ERROR(e->idx_host_.Allocate(static_cast<size_t>(max_batch)));
  TRIB_RETURN_IF_ERROR(e->totals_host_.Allocate(1));
  TRIB_RETURN_IF_ERROR(ctx.Synchronize());
  return e;
}

CudaEngine::~CudaEngine() {
  // The buffers below are freed after this body runs; make their device current for them.
  if (ctx_) (void)ctx_->Activate();
}

std::string CudaEngine::device_name() const {
  return "cuda:" + std::to_string(ctx_->device_index()) + " (" + ctx_->device_name() + ")";
}

Status CudaEngine::LoadWeights(const ModelWeights& weights) {
  TRIB_RETURN_IF_ERROR(status_);
  if (weights.fingerprint() != fingerprint_ || weights.size() != num_params_)
    return Status::InvalidArgument("weights do not match the layout of model " + spec_.name);
  TRIB_RETURN_IF_ERROR(ctx_->Activate());
  const size_t bytes = num_params_ * sizeof(float);
  CUDA_CHECK(cudaMemcpyAsync(params_.data(), weights.data().data(), bytes, cudaMemcpyHostToDevice,
                             ctx_->stream()));
  CUDA_CHECK(cudaMemcpyAsync(anchor_.data(), params_.data(), bytes, cudaMemcpyDeviceToDevice,
                             ctx_->stream()));
  if (!keep_optimizer_state_) {
    CUDA_CHECK(cudaMemsetAsync(velocity_.data(), 0, bytes, ctx_->stream()));
    if (second_moment_.size() == num_params_)
      CUDA_CHECK(cudaMemsetAsync(second_moment_.data(), 0, bytes, ctx_->stream()));
    adam_step_ = 0;  // Adam's state starts again, as momentum's does
  }
  has_correction_ = false;
  // The host buffer is pageable and belongs to the caller: finish before returning.
  return ctx_->Synchronize();
}

Status CudaEngine::SetCorrection(std::span<const float> correction) {
  TRIB_RETURN_IF_ERROR(status_);
  if (correction.empty()) {
    has_correction_ = false;
    return Status::Ok();
  }
  if (correction.size() != num_params_)
    return Status::InvalidArgument(
        "the SCAFFOLD correction has " + std::to_string(correction.size()) + " values; model " +
        spec_.name + " has " + std::to_string(num_params_) + " parameters");
  TRIB_RETURN_IF_ERROR(ctx_->Activate());
  TRIB_RETURN_IF_ERROR(correction_.Upload(correction.data(), correction.size(), ctx_->stream()));
  has_correction_ = true;
  return Status::Ok();
}

Status CudaEngine::StoreWeights(ModelWeights* out) {
  TRIB_RETURN_IF_ERROR(status_);
  if (out->fingerprint() != fingerprint_ || out->size() != num_params_)
    return Status::InvalidArgument("output weights do not match the layout of model " + spec_.name);
  TRIB_RETURN_IF_ERROR(ctx_->Activate());
  CUDA_CHECK(cudaMemcpyAsync(out->data().data(), params_.data(), num_params_ * sizeof(float),
                             cudaMemcpyDeviceToHost, ctx_->stream()));
  return ctx_->Synchronize();
}

Status CudaEngine::Gather(const Dataset& data, std::span<const uint32_t> batch) {
  const int64_t n = static_cast<int64_t>(batch.size());
  TRIB_CHECK(n >= 1 && n <= max_batch_, "batch size out of range");
  TRIB_CHECK_EQ(data.sample_size(), spec_.input.numel(),
                "dataset sample shape does not match the model");
  // Checked on the host because a bad index or label would make a kernel read out of bounds. A
  // device part (no classes) never reads the labels.
  for (uint32_t i : batch) {
    TRIB_CHECK(i < data.labels.size(), "sample index out of range");
    TRIB_CHECK(spec_.num_classes == 0 || data.labels[i] < spec_.num_classes,
               "label out of range for the model");
  }
  TRIB_RETURN_IF_ERROR(ctx_->Activate());
  TRIB_ASSIGN_OR_RETURN(DeviceDataset dev, datasets_.Get(data, ctx_->stream()));
  cudaStream_t stream = ctx_->stream();
  // Staged through pinned memory so the copy is truly asynchronous. The previous step synchronized
  // before returning, so nothing still reads idx_host_.
  std::memcpy(idx_host_.data(), batch.data(), batch.size_bytes());
  CUDA_CHECK(cudaMemcpyAsync(batch_idx_.data(), idx_host_.data(), batch.size_bytes(),
                             cudaMemcpyHostToDevice, stream));
  CUDA_CHECK(LaunchGatherBatch(dev.images, dev.labels, batch_idx_.data(), n, data.sample_size(),
                               act_ptr_[0], batch_labels_.data(), stream));
  return Status::Ok();
}

Status CudaEngine::ForwardLayers(int64_t n, bool training) {
  // Sequence lengths from the embedding's pad, for the recurrent layers.
  const int64_t positions = positions_;
  if (positions > 0)
    CUDA_CHECK(LaunchSequenceLengths(act_ptr_[0], n, positions,
                                     static_cast<float>(spec_.layers[0].pad), lengths_.data(),
                                     ctx_->stream()));
  for (size_t i = 0; i < layers_.size(); ++i)
    layers_[i]->BeginBatch(training, DropoutKey(dropout_seed_, dropout_step_, i),
                           positions > 0 ? lengths_.data() : nullptr);
  for (size_t i = 0; i < layers_.size(); ++i)
    if (!layers_[i]->is_identity())
      TRIB_RETURN_IF_ERROR(layers_[i]->Forward(act_ptr_[i], act_ptr_[i + 1], n));
  return Status::Ok();
}

Status CudaEngine::Loss(int64_t n, bool need_grad) {
  cudaStream_t stream = ctx_->stream();
  CUDA_CHECK(LaunchSoftmaxXent(act_ptr_.back(), batch_labels_.data(), n, spec_.num_classes,
                               need_grad ? grad_a_.data() : nullptr, totals_.data(), stream,
                               spec_.loss));
  CUDA_CHECK(cudaMemcpyAsync(totals_host_.data(), totals_.data(), sizeof(LossTotals),
                             cudaMemcpyDeviceToHost, stream));
  return Status::Ok();
}

Status CudaEngine::Forward(const Dataset& data, std::span<const uint32_t> batch, bool need_grad) {
  const int64_t n = static_cast<int64_t>(batch.size());
  TRIB_CHECK(spec_.num_classes != 0, "a device part trains through ForwardToCut/BackwardFromCut");
  TRIB_RETURN_IF_ERROR(Gather(data, batch));
  TRIB_RETURN_IF_ERROR(ForwardLayers(n, need_grad));
  return Loss(n, need_grad);
}

Status CudaEngine::Backward(int64_t n, float** input_grad) {
  for (size_t a = 0; a < skip_grads_.size(); ++a)
    if (skip_grads_[a].size() != 0)
      CUDA_CHECK(cudaMemsetAsync(skip_grads_[a].data(), 0,
                                 sizeof(float) * static_cast<size_t>(n * out_sizes_[a - 1]),
                                 ctx_->stream()));
  float* g_out = grad_a_.data();
  float* g_in = grad_b_.data();
  for (size_t i = layers_.size(); i-- > 0;) {
    // Layer i's output also feeds residual connections: their gradient joins the one from above.
    if (skip_grads_[i + 1].size() != 0)
      CUDA_CHECK(
          LaunchAdd(g_out, skip_grads_[i + 1].data(), g_out, n * out_sizes_[i], ctx_->stream()));
    CudaLayer& layer = *layers_[i];
    if (layer.is_identity()) continue;
    // Nothing upstream of the first computing layer needs a gradient (it would be the input's),
    // unless the caller asks for it (a server part's gradient at the cut).
    const bool first = (i == first_layer_);
    TRIB_RETURN_IF_ERROR(layer.Backward(act_ptr_[i], act_ptr_[i + 1], g_out,
                                        first && input_grad == nullptr ? nullptr : g_in, n));
    std::swap(g_out, g_in);
  }
  if (input_grad != nullptr) *input_grad = g_out;
  return Status::Ok();
}

Status CudaEngine::ApplySgd(const SgdConfig& cfg) {
  const float* corr = has_correction_ ? correction_.data() : nullptr;
  if (cfg.optimizer != OptimizerKind::kSgd) {
    // Adam: the first moment in velocity_, the second here (made, zeroed, on first use).
    if (second_moment_.size() != num_params_) {
      TRIB_RETURN_IF_ERROR(second_moment_.Allocate(num_params_));
      CUDA_CHECK(
          cudaMemsetAsync(second_moment_.data(), 0, num_params_ * sizeof(float), ctx_->stream()));
    }
    const AdamParams p = AdamParamsAt(cfg, ++adam_step_);
    // One launch per trainable range: a frozen layer's parameters are left as they are.
    for (const auto& [lo, hi] : trainable_) {
      CUDA_CHECK(LaunchAdamUpdate(params_.data() + lo, grads_.data() + lo, velocity_.data() + lo,
                                  second_moment_.data() + lo, anchor_.data() + lo,
                                  corr == nullptr ? nullptr : corr + lo, hi - lo, p,
                                  ctx_->stream()));
    }
    return Status::Ok();
  }
  const SgdParams p{cfg.lr, cfg.momentum, cfg.weight_decay, cfg.proximal_mu};
  for (const auto& [lo, hi] : trainable_) {
    CUDA_CHECK(LaunchSgdUpdate(params_.data() + lo, grads_.data() + lo, velocity_.data() + lo,
                               anchor_.data() + lo, corr == nullptr ? nullptr : corr + lo, hi - lo,
                               p, ctx_->stream()));
  }
  return Status::Ok();
}

Status CudaEngine::Keep(Status s) {
  if (!s.ok() && status_.ok()) {
    Log().error("CUDA engine on {} failed: {}", device_name(), s.ToString());
    status_ = s;
  }
  return s;
}

Status CudaEngine::ForwardToCut(const Dataset& data, std::span<const uint32_t> batch,
                                std::span<float> acts) {
  TRIB_RETURN_IF_ERROR(status_);
  const int64_t n = static_cast<int64_t>(batch.size());
  const int64_t out = out_sizes_.back();
  TRIB_RETURN_IF_ERROR(CheckForwardToCut(spec_, max_batch_, out, data, batch, acts.size()));
  return Keep([&]() -> Status {
    TRIB_RETURN_IF_ERROR(Gather(data, batch));
    TRIB_RETURN_IF_ERROR(ForwardLayers(n));
    CUDA_CHECK(cudaMemcpyAsync(acts.data(), act_ptr_.back(), acts.size_bytes(),
                               cudaMemcpyDeviceToHost, ctx_->stream()));
    TRIB_RETURN_IF_ERROR(ctx_->Synchronize());
    cut_batch_ = n;
    return Status::Ok();
  }());
}

Status CudaEngine::ForwardToCut(std::span<const float> inputs, std::span<float> acts) {
  TRIB_RETURN_IF_ERROR(status_);
  const int64_t out = out_sizes_.back();
  TRIB_RETURN_IF_ERROR(CheckForwardFromInputs(spec_, max_batch_, out, inputs.size(), acts.size()));
  const int64_t n = static_cast<int64_t>(inputs.size()) / spec_.input.numel();
  return Keep([&]() -> Status {
    TRIB_RETURN_IF_ERROR(ctx_->Activate());
    cudaStream_t stream = ctx_->stream();
    CUDA_CHECK(cudaMemcpyAsync(act_ptr_[0], inputs.data(), inputs.size_bytes(),
                               cudaMemcpyHostToDevice, stream));
    TRIB_RETURN_IF_ERROR(ForwardLayers(n));
    CUDA_CHECK(cudaMemcpyAsync(acts.data(), act_ptr_.back(), acts.size_bytes(),
                               cudaMemcpyDeviceToHost, stream));
    TRIB_RETURN_IF_ERROR(ctx_->Synchronize());
    cut_batch_ = n;
    return Status::Ok();
  }());
}

Status CudaEngine::BackwardFromCut(std::span<const float> grad, const SgdConfig& cfg) {
  TRIB_RETURN_IF_ERROR(status_);
  TRIB_RETURN_IF_ERROR(CheckBackwardFromCut(spec_, cut_batch_, out_sizes_.back(), grad.size()));
  return BackwardThroughCut(grad, cfg, {});
}

Status CudaEngine::BackwardFromCut(std::span<const float> grad, const SgdConfig& cfg,
                                   std::span<float> input_grad) {
  TRIB_RETURN_IF_ERROR(status_);
  TRIB_RETURN_IF_ERROR(
      CheckBackwardFromCut(spec_, cut_batch_, out_sizes_.back(), grad.size(), input_grad.size()));
  return BackwardThroughCut(grad, cfg, input_grad);
}

Status CudaEngine::BackwardThroughCut(std::span<const float> grad, const SgdConfig& cfg,
                                      std::span<float> input_grad) {
  const int64_t n = cut_batch_;
  cut_batch_ = 0;
  return Keep([&]() -> Status {
    TRIB_RETURN_IF_ERROR(ctx_->Activate());
    cudaStream_t stream = ctx_->stream();
    CUDA_CHECK(cudaMemcpyAsync(grad_a_.data(), grad.data(), grad.size_bytes(),
                               cudaMemcpyHostToDevice, stream));
    float* at_input = nullptr;
    TRIB_RETURN_IF_ERROR(Backward(n, input_grad.empty() ? nullptr : &at_input));
    TRIB_RETURN_IF_ERROR(ApplySgd(cfg));
    if (!input_grad.empty())
      CUDA_CHECK(cudaMemcpyAsync(input_grad.data(), at_input, input_grad.size_bytes(),
                                 cudaMemcpyDeviceToHost, stream));
    return ctx_->Synchronize();  // the host's buffers belong to the caller
  }());
}

Result<StepStats> CudaEngine::TrainFromCut(std::span<const float> acts,
                                           std::span<const uint8_t> labels, const SgdConfig& cfg,
                                           std::span<float> grad) {
  TRIB_RETURN_IF_ERROR(status_);
  TRIB_RETURN_IF_ERROR(CheckTrainFromCut(spec_, max_batch_, acts, labels, grad.size()));
  const int64_t n = static_cast<int64_t>(labels.size());
  auto run = [&]() -> Status {
    TRIB_RETURN_IF_ERROR(ctx_->Activate());
    cudaStream_t stream = ctx_->stream();
    CUDA_CHECK(cudaMemcpyAsync(act_ptr_[0], acts.data(), acts.size_bytes(), cudaMemcpyHostToDevice,
                               stream));
    CUDA_CHECK(cudaMemcpyAsync(batch_labels_.data(), labels.data(), labels.size_bytes(),
                               cudaMemcpyHostToDevice, stream));
    TRIB_RETURN_IF_ERROR(ForwardLayers(n));
    TRIB_RETURN_IF_ERROR(Loss(n, /*need_grad=*/true));
    float* at_cut = nullptr;
    TRIB_RETURN_IF_ERROR(Backward(n, &at_cut));
    TRIB_RETURN_IF_ERROR(ApplySgd(cfg));
    CUDA_CHECK(
        cudaMemcpyAsync(grad.data(), at_cut, grad.size_bytes(), cudaMemcpyDeviceToHost, stream));
    return ctx_->Synchronize();
  };
  TRIB_RETURN_IF_ERROR(Keep(run()));
  StepStats st;
  st.loss_sum = totals_host_.data()->loss_sum;
  st.correct = totals_host_.data()->correct;
  st.count = n;
  return st;
}

Status CudaEngine::Step(const Dataset& data, std::span<const uint32_t> batch, const SgdConfig* sgd,
                        StepStats* out) {
  TRIB_RETURN_IF_ERROR(status_);
  const int64_t n = static_cast<int64_t>(batch.size());
  TRIB_RETURN_IF_ERROR(Forward(data, batch, /*need_grad=*/sgd != nullptr));
  if (sgd != nullptr) {
    TRIB_RETURN_IF_ERROR(Backward(n));
    TRIB_RETURN_IF_ERROR(ApplySgd(*sgd));
    ++dropout_step_;
  }
  TRIB_RETURN_IF_ERROR(ctx_->Synchronize());
  out->loss_sum = totals_host_.data()->loss_sum;
  out->correct = totals_host_.data()->correct;
  out->count = n;
  return Status::Ok();
}

StepStats CudaEngine::Failed(Status s, int64_t n) {
  (void)Keep(std::move(s));
  StepStats st;
  st.loss_sum = std::numeric_limits<double>::quiet_NaN();
  st.count = n;
  return st;
}

StepStats CudaEngine::TrainStep(const Dataset& data, std::span<const uint32_t> batch,
                                const SgdConfig& cfg) {
  StepStats st;
  Status s = Step(data, batch, &cfg, &st);
  return s.ok() ? st : Failed(std::move(s), static_cast<int64_t>(batch.size()));
}

StepStats CudaEngine::EvalStep(const Dataset& data, std::span<const uint32_t> batch) {
  StepStats st;
  Status s = Step(data, batch, nullptr, &st);
  return s.ok() ? st : Failed(std::move(s), static_cast<int64_t>(batch.size()));
}

Result<StepStats> CudaEngine::ComputeGradients(const Dataset& data,
                                               std::span<const uint32_t> batch) {
  TRIB_RETURN_IF_ERROR(status_);
  TRIB_RETURN_IF_ERROR(Forward(data, batch, /*need_grad=*/true));
  TRIB_RETURN_IF_ERROR(Backward(static_cast<int64_t>(batch.size())));
  TRIB_RETURN_IF_ERROR(ctx_->Synchronize());
  StepStats st;
  st.loss_sum = totals_host_.data()->loss_sum;
  st.correct = totals_host_.data()->correct;
  st.count = static_cast<int64_t>(batch.size());
  return st;
}

Status CudaEngine::DownloadGradients(std::vector<float>* out) const {
  TRIB_RETURN_IF_ERROR(ctx_->Activate());
  return grads_.Download(out, ctx_->stream());
}

}  // namespace cuda
}  // namespace tributary
