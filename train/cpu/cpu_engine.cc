#include "train/cpu/cpu_engine.h"

#include <algorithm>
#include <cstring>

#include "core/check.h"
#include "train/cpu/conv2d.h"
#include "train/cpu/dense.h"
#include "train/cpu/depthwise_conv2d.h"
#include "train/cpu/embedding.h"
#include "train/cpu/gemm.h"
#include "train/cpu/gru.h"
#include "train/cpu/lstm.h"
#include "train/cpu/norm.h"
#include "train/cpu/pointwise.h"
#include "train/cpu/softmax_xent.h"
#include "train/dropout_math.h"
#include "train/embedding_math.h"
#include "train/sgd.h"
#include "train/split_checks.h"

namespace tributary {

Result<std::unique_ptr<Engine>> CreateCpuEngine(const ModelSpec& spec, int64_t max_batch,
                                                int threads) {
  TRIB_ASSIGN_OR_RETURN(auto engine, cpu::CpuEngine::Create(spec, max_batch, threads));
  return std::unique_ptr<Engine>(std::move(engine));
}

namespace cpu {

Result<std::unique_ptr<CpuEngine>> CpuEngine::Create(const ModelSpec& spec, int64_t max_batch,
                                                     int threads) {
  if (max_batch <= 0 || max_batch > (1 << 20))
    return Status::InvalidArgument("max_batch must be in [1, 2^20], got " +
                                   std::to_string(max_batch));
  if (threads < 1 || threads > 256)
    return Status::InvalidArgument("CPU training threads must be in [1, 256], got " +
                                   std::to_string(threads));
  TRIB_ASSIGN_OR_RETURN(std::vector<Shape3> shapes, LayerOutputShapes(spec));
  TRIB_ASSIGN_OR_RETURN(ModelWeights::LayoutSpec layout, ParameterLayout(spec));
  TRIB_ASSIGN_OR_RETURN(ModelWeights proto, ModelWeights::Create(layout));
  std::unique_ptr<CpuEngine> e(new CpuEngine());
  e->spec_ = spec;
  e->positions_ = SequencePositions(spec);
  e->max_batch_ = max_batch;
  e->fingerprint_ = proto.fingerprint();
  e->max_act_ = spec.input.numel();
  for (const Shape3& s : shapes) {
    e->out_sizes_.push_back(s.numel());
    e->max_act_ = std::max(e->max_act_, s.numel());
  }
  e->shapes_ = std::move(shapes);
  const size_t n_params = proto.size();
  e->params_.assign(n_params, 0.0f);
  TRIB_ASSIGN_OR_RETURN(e->trainable_, TrainableRanges(spec));
  e->grads_.assign(n_params, 0.0f);
  e->velocity_.assign(n_params, 0.0f);
  e->anchor_.assign(n_params, 0.0f);

  // More threads than samples would leave replicas idle in every step.
  threads = static_cast<int>(std::min<int64_t>(threads, max_batch));
  const int64_t shard_max = (max_batch + threads - 1) / threads;
  e->replicas_.resize(static_cast<size_t>(threads));
  for (int i = 0; i < threads; ++i) {
    Replica& r = e->replicas_[static_cast<size_t>(i)];
    if (i > 0) r.grads.assign(n_params, 0.0f);
    TRIB_RETURN_IF_ERROR(
        e->BuildReplica(&r, shard_max, i == 0 ? e->grads_.data() : r.grads.data()));
  }
  if (threads > 1) e->pool_ = std::make_unique<ForkJoin>(threads);
  return e;
}

Status CpuEngine::BuildReplica(Replica* r, int64_t shard_max, float* grads) {
  for (size_t li = 0; li < spec_.layers.size(); ++li) {
    const LayerSpec& l = spec_.layers[li];
    const Shape3 in = li == 0 ? spec_.input : shapes_[li - 1];
    std::unique_ptr<CpuLayer> layer;
    switch (l.kind) {
      case LayerKind::kDense:
        layer = std::make_unique<Dense>(in.numel(), l.out_features);
        break;
      case LayerKind::kConv2D:
      case LayerKind::kConv1D:
        layer = std::make_unique<Conv2D>(ConvTapsOf(l, in), l.out_channels, shard_max);
        break;
      case LayerKind::kDepthwiseConv2D:
        layer = std::make_unique<DepthwiseConv2D>(
            DepthwiseGeometry{in.h, in.w, in.c, l.kernel, l.padding});
        break;
      case LayerKind::kEmbedding:
        layer = std::make_unique<Embedding>(in.numel(), l.vocab, l.out_features);
        break;
      case LayerKind::kLstm:
        layer = std::make_unique<Lstm>(
            RecurrentShape{in.h, in.w * in.c, l.out_features, l.return_sequences});
        break;
      case LayerKind::kGru:
        layer = std::make_unique<Gru>(
            RecurrentShape{in.h, in.w * in.c, l.out_features, l.return_sequences});
        break;
      case LayerKind::kMaxPool2D:
        layer = std::make_unique<MaxPool2D>(in.h, in.w, in.c, l.kernel, shard_max);
        break;
      case LayerKind::kReLU:
        layer = std::make_unique<ReLU>(in.numel());
        break;
      case LayerKind::kGroupNorm:
      case LayerKind::kLayerNorm:
        layer = std::make_unique<Norm>(
            NormGeometry{in.h * in.w, in.c, l.kind == LayerKind::kGroupNorm ? l.groups : 1,
                         l.kind == LayerKind::kLayerNorm},
            shard_max);
        break;
      case LayerKind::kAvgPool2D:
        layer = std::make_unique<AvgPool2D>(in.h, in.w, in.c, l.kernel, l.kernel);
        break;
      case LayerKind::kGlobalAvgPool:
        layer = std::make_unique<AvgPool2D>(in.h, in.w, in.c, in.h, in.w);
        break;
      case LayerKind::kSigmoid:
        layer = std::make_unique<Activation>(ActivationFn::kSigmoid, in.numel());
        break;
      case LayerKind::kTanh:
        layer = std::make_unique<Activation>(ActivationFn::kTanh, in.numel());
        break;
      case LayerKind::kGelu:
        layer = std::make_unique<Activation>(ActivationFn::kGelu, in.numel());
        break;
      case LayerKind::kDropout:
        layer = std::make_unique<Dropout>(l.rate, in.numel());
        break;
      case LayerKind::kAdd:
        layer = std::make_unique<Add>(in.numel());
        break;
      case LayerKind::kFlatten:
        layer = std::make_unique<Flatten>();
        break;
    }
    r->layers.push_back(std::move(layer));
  }
  size_t offset = 0;
  for (auto& layer : r->layers) {
    layer->Bind(params_.data() + offset, grads + offset);
    offset += static_cast<size_t>(layer->num_params());
  }
  TRIB_CHECK_EQ(offset, params_.size(), "layer parameter counts disagree with ParameterLayout");

  const size_t n_layers = r->layers.size();
  r->acts.resize(n_layers + 1);
  r->act_ptr.resize(n_layers + 1);
  r->acts[0].resize(static_cast<size_t>(shard_max * spec_.input.numel()));
  r->act_ptr[0] = r->acts[0].data();
  for (size_t i = 0; i < n_layers; ++i) {
    if (r->layers[i]->is_identity()) {
      r->act_ptr[i + 1] = r->act_ptr[i];
    } else {
      r->acts[i + 1].resize(static_cast<size_t>(shard_max * out_sizes_[i]));
      r->act_ptr[i + 1] = r->acts[i + 1].data();
    }
  }
  // Residual connections: each add layer reads its source layer's output and sends that output
  // its gradient through a buffer per source (act index from + 1).
  r->skip_grads.resize(n_layers + 1);
  for (size_t i = 0; i < n_layers; ++i) {
    if (spec_.layers[i].kind != LayerKind::kAdd) continue;
    const auto src = static_cast<size_t>(spec_.layers[i].from) + 1;
    if (r->skip_grads[src].empty())
      r->skip_grads[src].resize(static_cast<size_t>(shard_max * out_sizes_[src - 1]));
    static_cast<Add*>(r->layers[i].get())->Connect(r->act_ptr[src], r->skip_grads[src].data());
  }
  first_layer_ = 0;
  while (first_layer_ + 1 < n_layers && r->layers[first_layer_]->is_identity()) ++first_layer_;
  r->grad_a.resize(static_cast<size_t>(shard_max * max_act_));
  r->grad_b.resize(static_cast<size_t>(shard_max * max_act_));
  return Status::Ok();
}

std::string CpuEngine::device_name() const {
  if (replicas_.size() <= 1) return "cpu";
  return "cpu (" + std::to_string(replicas_.size()) + " threads)";
}

Status CpuEngine::LoadWeights(const ModelWeights& weights) {
  if (weights.fingerprint() != fingerprint_ || weights.size() != params_.size())
    return Status::InvalidArgument("weights do not match the layout of model " + spec_.name);
  std::copy(weights.data().begin(), weights.data().end(), params_.begin());
  std::copy(params_.begin(), params_.end(), anchor_.begin());
  if (!keep_optimizer_state_) {
    std::fill(velocity_.begin(), velocity_.end(), 0.0f);
    second_moment_.clear();  // Adam's state starts again, as momentum's does
    adam_step_ = 0;
  }
  correction_.clear();
  return Status::Ok();
}

Status CpuEngine::SetCorrection(std::span<const float> correction) {
  if (!correction.empty() && correction.size() != params_.size())
    return Status::InvalidArgument(
        "the SCAFFOLD correction has " + std::to_string(correction.size()) + " values; model " +
        spec_.name + " has " + std::to_string(params_.size()) + " parameters");
  correction_.assign(correction.begin(), correction.end());
  return Status::Ok();
}

Status CpuEngine::StoreWeights(ModelWeights* out) {
  if (out->fingerprint() != fingerprint_ || out->size() != params_.size())
    return Status::InvalidArgument("output weights do not match the layout of model " + spec_.name);
  std::copy(params_.begin(), params_.end(), out->data().begin());
  return Status::Ok();
}

std::pair<int64_t, int64_t> CpuEngine::ShardRange(int64_t n, int shards, int i) {
  return {n * i / shards, n * (i + 1) / shards};
}

void CpuEngine::RunShard(Replica& r, const Dataset* data, std::span<const uint32_t> shard,
                         const float* inputs, int64_t count, int64_t total, bool need_grad,
                         const uint8_t* labels, float* input_grad) {
  const int64_t ss = spec_.input.numel();
  float* x = r.act_ptr[0];
  if (inputs != nullptr) {
    std::memcpy(x, inputs, sizeof(float) * count * ss);
    if (labels != nullptr) r.labels.assign(labels, labels + count);
  } else {
    r.labels.resize(shard.size());
    for (int64_t i = 0; i < count; ++i) {
      std::memcpy(x + i * ss, data->image(shard[i]), sizeof(float) * ss);
      r.labels[i] = data->labels[shard[i]];
    }
  }
  // Sequence lengths from the embedding's pad, for the recurrent layers.
  const int64_t positions = positions_;
  if (positions > 0) {
    r.lengths.resize(static_cast<size_t>(count));
    const auto pad = static_cast<float>(spec_.layers[0].pad);
    for (int64_t s = 0; s < count; ++s)
      r.lengths[static_cast<size_t>(s)] = SequenceLength(x + s * ss, positions, pad);
  }
  for (size_t i = 0; i < r.layers.size(); ++i)
    r.layers[i]->BeginBatch(need_grad, DropoutKey(dropout_seed_, dropout_step_, i), r.first_sample,
                            positions > 0 ? r.lengths.data() : nullptr);
  for (size_t i = 0; i < r.layers.size(); ++i)
    if (!r.layers[i]->is_identity()) r.layers[i]->Forward(r.act_ptr[i], r.act_ptr[i + 1], count);
  if (spec_.num_classes == 0 || (inputs != nullptr && labels == nullptr)) return;
  const int64_t k = spec_.num_classes;
  r.stats = ComputeLoss(spec_.loss, r.act_ptr.back(), r.labels.data(), count, k,
                        need_grad ? r.grad_a.data() : nullptr, total);
  if (need_grad) BackwardShard(r, count, input_grad);
}

void CpuEngine::BackwardShard(Replica& r, int64_t count, float* input_grad) {
  for (size_t a = 0; a < r.skip_grads.size(); ++a)
    if (!r.skip_grads[a].empty())
      std::fill_n(r.skip_grads[a].begin(), count * out_sizes_[a - 1], 0.0f);
  float* g_out = r.grad_a.data();
  float* g_in = r.grad_b.data();
  for (size_t i = r.layers.size(); i-- > 0;) {
    // Layer i's output also feeds residual connections: their gradient joins the one from above.
    if (const AlignedVector& skip = r.skip_grads[i + 1]; !skip.empty()) {
      const int64_t len = count * out_sizes_[i];
      for (int64_t k = 0; k < len; ++k) g_out[k] += skip[static_cast<size_t>(k)];
    }
    CpuLayer& layer = *r.layers[i];
    if (layer.is_identity()) continue;
    // Nothing upstream of the first computing layer needs a gradient (it would be the input's),
    // unless the caller asks for it (a server part's gradient at the cut).
    const bool first = (i == first_layer_);
    layer.Backward(r.act_ptr[i], r.act_ptr[i + 1], g_out,
                   first && input_grad == nullptr ? nullptr : g_in, count);
    std::swap(g_out, g_in);
  }
  if (input_grad != nullptr)
    std::memcpy(input_grad, g_out, sizeof(float) * count * spec_.input.numel());
}

StepStats CpuEngine::Step(const Dataset& data, std::span<const uint32_t> batch, bool need_grad) {
  const int64_t n = static_cast<int64_t>(batch.size());
  TRIB_CHECK(n >= 1 && n <= max_batch_, "batch size out of range");
  TRIB_CHECK(spec_.num_classes != 0, "a device part trains through ForwardToCut/BackwardFromCut");
  TRIB_CHECK_EQ(data.sample_size(), spec_.input.numel(),
                "dataset sample shape does not match the model");
  for (uint32_t i : batch) TRIB_CHECK(i < data.labels.size(), "sample index out of range");
  const int shards = static_cast<int>(std::min<int64_t>(n, threads()));
  auto shard = [&](int i) {
    const auto [begin, end] = ShardRange(n, shards, i);
    Replica& r = replicas_[static_cast<size_t>(i)];
    r.first_sample = begin;
    RunShard(r, &data, batch.subspan(begin, end - begin), nullptr, end - begin, n, need_grad);
  };
  ForShards(shards, shard);
  return SumStats(shards);
}

void CpuEngine::ForShards(int shards, const std::function<void(int)>& shard) {
  if (shards == 1)
    shard(0);
  else
    pool_->Run(shards, shard);
}

StepStats CpuEngine::SumStats(int shards) const {
  StepStats st;
  for (int i = 0; i < shards; ++i) {
    const StepStats& s = replicas_[static_cast<size_t>(i)].stats;
    st.loss_sum += s.loss_sum;
    st.correct += s.correct;
    st.count += s.count;
  }
  return st;
}

void CpuEngine::SumGradients(int shards, int64_t begin, int64_t end) {
  float* __restrict g = grads_.data();
  for (int r = 1; r < shards; ++r) {
    const float* __restrict other = replicas_[static_cast<size_t>(r)].grads.data();
    for (int64_t i = begin; i < end; ++i) g[i] += other[i];
  }
}

StepStats CpuEngine::ComputeGradients(const Dataset& data, std::span<const uint32_t> batch) {
  StepStats st = Step(data, batch, /*need_grad=*/true);
  const int shards =
      static_cast<int>(std::min<int64_t>(static_cast<int64_t>(batch.size()), threads()));
  if (shards > 1) {
    const int64_t n = static_cast<int64_t>(grads_.size());
    pool_->Run(shards, [&](int t) {
      const auto [begin, end] = ShardRange(n, shards, t);
      SumGradients(shards, begin, end);
    });
  }
  return st;
}

void CpuEngine::ApplyStep(int shards, const SgdConfig& cfg) {
  const float* corr = correction_.empty() ? nullptr : correction_.data();
  const bool adam = cfg.optimizer != OptimizerKind::kSgd;
  if (adam) {
    // Adam's moments: the first in velocity_, the second here; one step count per update.
    if (second_moment_.size() != params_.size()) second_moment_.assign(params_.size(), 0.0f);
    ++adam_step_;
  }
  // The update of parameters [begin, end): of those in it that are trainable (frozen layers'
  // parameters are left as they are).
  auto update = [&](int64_t begin, int64_t end) {
    for (const auto& [first, last] : trainable_) {
      const int64_t lo = std::max(begin, first), hi = std::min(end, last);
      if (lo >= hi) continue;
      const auto n = static_cast<size_t>(hi - lo);
      const float* c = corr == nullptr ? nullptr : corr + lo;
      if (adam)
        AdamUpdate(params_.data() + lo, grads_.data() + lo, velocity_.data() + lo,
                   second_moment_.data() + lo, anchor_.data() + lo, n, cfg, adam_step_, c);
      else
        SgdUpdate(params_.data() + lo, grads_.data() + lo, velocity_.data() + lo,
                  anchor_.data() + lo, n, cfg, c);
    }
  };
  const int64_t n = static_cast<int64_t>(grads_.size());
  if (shards == 1) {
    update(0, n);
    return;
  }
  // Per slice of the parameters: sum the replicas' gradients in replica order, then update.
  pool_->Run(shards, [&](int t) {
    const auto [begin, end] = ShardRange(n, shards, t);
    SumGradients(shards, begin, end);
    update(begin, end);
  });
}

StepStats CpuEngine::TrainStep(const Dataset& data, std::span<const uint32_t> batch,
                               const SgdConfig& cfg) {
  const int shards =
      static_cast<int>(std::min<int64_t>(static_cast<int64_t>(batch.size()), threads()));
  StepStats st = Step(data, batch, /*need_grad=*/true);
  ApplyStep(shards, cfg);
  ++dropout_step_;
  return st;
}

Status CpuEngine::ForwardToCut(const Dataset& data, std::span<const uint32_t> batch,
                               std::span<float> acts) {
  const int64_t n = static_cast<int64_t>(batch.size());
  const int64_t out = out_sizes_.back();
  TRIB_RETURN_IF_ERROR(CheckForwardToCut(spec_, max_batch_, out, data, batch, acts.size()));
  const int shards = static_cast<int>(std::min<int64_t>(n, threads()));
  auto shard = [&](int i) {
    const auto [begin, end] = ShardRange(n, shards, i);
    Replica& r = replicas_[static_cast<size_t>(i)];
    RunShard(r, &data, batch.subspan(begin, end - begin), nullptr, end - begin, n, false);
    std::memcpy(acts.data() + begin * out, r.act_ptr.back(), sizeof(float) * (end - begin) * out);
  };
  ForShards(shards, shard);
  cut_batch_ = n;
  return Status::Ok();
}

Status CpuEngine::ForwardToCut(std::span<const float> inputs, std::span<float> acts) {
  const int64_t out = out_sizes_.back(), ss = spec_.input.numel();
  TRIB_RETURN_IF_ERROR(CheckForwardFromInputs(spec_, max_batch_, out, inputs.size(), acts.size()));
  const int64_t n = static_cast<int64_t>(inputs.size()) / ss;
  const int shards = static_cast<int>(std::min<int64_t>(n, threads()));
  auto shard = [&](int i) {
    const auto [begin, end] = ShardRange(n, shards, i);
    Replica& r = replicas_[static_cast<size_t>(i)];
    RunShard(r, nullptr, {}, inputs.data() + begin * ss, end - begin, n, false);
    std::memcpy(acts.data() + begin * out, r.act_ptr.back(), sizeof(float) * (end - begin) * out);
  };
  ForShards(shards, shard);
  cut_batch_ = n;
  return Status::Ok();
}

Status CpuEngine::BackwardFromCut(std::span<const float> grad, const SgdConfig& cfg) {
  TRIB_RETURN_IF_ERROR(CheckBackwardFromCut(spec_, cut_batch_, out_sizes_.back(), grad.size()));
  BackwardThroughCut(grad, cfg, nullptr);
  return Status::Ok();
}

Status CpuEngine::BackwardFromCut(std::span<const float> grad, const SgdConfig& cfg,
                                  std::span<float> input_grad) {
  TRIB_RETURN_IF_ERROR(
      CheckBackwardFromCut(spec_, cut_batch_, out_sizes_.back(), grad.size(), input_grad.size()));
  BackwardThroughCut(grad, cfg, input_grad.data());
  return Status::Ok();
}

void CpuEngine::BackwardThroughCut(std::span<const float> grad, const SgdConfig& cfg,
                                   float* input_grad) {
  const int64_t n = cut_batch_, out = out_sizes_.back(), ss = spec_.input.numel();
  cut_batch_ = 0;
  const int shards = static_cast<int>(std::min<int64_t>(n, threads()));
  auto shard = [&](int i) {
    const auto [begin, end] = ShardRange(n, shards, i);
    Replica& r = replicas_[static_cast<size_t>(i)];
    std::memcpy(r.grad_a.data(), grad.data() + begin * out, sizeof(float) * (end - begin) * out);
    BackwardShard(r, end - begin, input_grad == nullptr ? nullptr : input_grad + begin * ss);
  };
  ForShards(shards, shard);
  ApplyStep(shards, cfg);
}

Result<StepStats> CpuEngine::TrainFromCut(std::span<const float> acts,
                                          std::span<const uint8_t> labels, const SgdConfig& cfg,
                                          std::span<float> grad) {
  TRIB_RETURN_IF_ERROR(CheckTrainFromCut(spec_, max_batch_, acts, labels, grad.size()));
  const int64_t n = static_cast<int64_t>(labels.size());
  const int64_t ss = spec_.input.numel();
  const int shards = static_cast<int>(std::min<int64_t>(n, threads()));
  auto shard = [&](int i) {
    const auto [begin, end] = ShardRange(n, shards, i);
    Replica& r = replicas_[static_cast<size_t>(i)];
    RunShard(r, nullptr, {}, acts.data() + begin * ss, end - begin, n, true, labels.data() + begin,
             grad.data() + begin * ss);
  };
  ForShards(shards, shard);
  ApplyStep(shards, cfg);
  return SumStats(shards);
}

StepStats CpuEngine::EvalStep(const Dataset& data, std::span<const uint32_t> batch) {
  return Step(data, batch, /*need_grad=*/false);
}

Status CpuEngine::Predict(std::span<const float> inputs, std::span<float> probs) {
  const int64_t ss = spec_.input.numel(), k = spec_.num_classes;
  if (k == 0)
    return Status::FailedPrecondition("model " + spec_.name +
                                      " is a device part: it predicts nothing");
  const int64_t total = static_cast<int64_t>(inputs.size());
  if (total == 0 || total % ss != 0)
    return Status::InvalidArgument("predict: " + std::to_string(total) +
                                   " input values are not a whole number of samples of " +
                                   std::to_string(ss) + " values (model " + spec_.name + ")");
  const int64_t n = total / ss;
  if (n > max_batch_)
    return Status::InvalidArgument("predict: " + std::to_string(n) +
                                   " samples exceed the batch of " + std::to_string(max_batch_));
  if (static_cast<int64_t>(probs.size()) != n * k)
    return Status::InvalidArgument("predict: the output holds " + std::to_string(probs.size()) +
                                   " values, " + std::to_string(n * k) + " needed");
  const int shards = static_cast<int>(std::min<int64_t>(n, threads()));
  auto shard = [&](int i) {
    const auto [begin, end] = ShardRange(n, shards, i);
    Replica& r = replicas_[static_cast<size_t>(i)];
    RunShard(r, nullptr, {}, inputs.data() + begin * ss, end - begin, n, false);
    Predictions(spec_.loss, r.act_ptr.back(), end - begin, k, probs.data() + begin * k);
  };
  ForShards(shards, shard);
  return Status::Ok();
}

}  // namespace cpu
}  // namespace tributary
