#include "train/native_trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>

#include "core/rng.h"
#include "train/sgd.h"
#include "train/token_ids.h"

namespace tributary {

Result<std::unique_ptr<NativeTrainer>> NativeTrainer::Create(const ModelSpec& spec,
                                                             std::shared_ptr<const Dataset> train,
                                                             std::shared_ptr<const Dataset> eval,
                                                             uint64_t init_seed,
                                                             EngineFactory factory) {
  if ((!train || train->size() == 0) && (!eval || eval->size() == 0))
    return Status::InvalidArgument("NativeTrainer needs a non-empty training or evaluation set");
  return Make(spec, std::move(train), std::move(eval), init_seed, std::move(factory));
}

Result<std::unique_ptr<NativeTrainer>> NativeTrainer::Make(const ModelSpec& spec,
                                                           std::shared_ptr<const Dataset> train,
                                                           std::shared_ptr<const Dataset> eval,
                                                           uint64_t init_seed,
                                                           EngineFactory factory) {
  for (const Dataset* d : {train.get(), eval.get()}) {
    if (!d) continue;
    if (d->sample_size() != spec.input.numel())
      return Status::InvalidArgument("dataset " + d->name + " has samples of " +
                                     std::to_string(d->sample_size()) + " values but model " +
                                     spec.name + " expects " + std::to_string(spec.input.numel()));
    if (spec.num_classes != 0 && d->num_classes > spec.num_classes)
      return Status::InvalidArgument("dataset " + d->name + " has more classes than model " +
                                     spec.name);
    TRIB_RETURN_IF_ERROR(CheckTokenIds(spec, d->images, "dataset " + d->name));
  }
  std::unique_ptr<NativeTrainer> t(new NativeTrainer());
  t->spec_ = spec;
  t->train_ = std::move(train);
  t->eval_ = std::move(eval);
  t->factory_ =
      factory ? std::move(factory)
              : EngineFactory([](const ModelSpec& s, int64_t b) { return CreateCpuEngine(s, b); });
  TRIB_ASSIGN_OR_RETURN(t->current_, InitWeights(spec, init_seed));
  return t;
}

Result<std::unique_ptr<NativeTrainer>> NativeTrainer::CreateStreaming(
    const ModelSpec& spec, BatchSource source, std::shared_ptr<const Dataset> eval,
    uint64_t init_seed, EngineFactory factory) {
  if (!source.read) return Status::InvalidArgument("the sample source has no read function");
  if (source.size < 1 || source.size > int64_t{std::numeric_limits<uint32_t>::max()})
    return Status::InvalidArgument("the sample source's size must be in [1, 2^32 - 1], got " +
                                   std::to_string(source.size));
  if (source.shape.numel() != spec.input.numel())
    return Status::InvalidArgument("the sample source has samples of " +
                                   std::to_string(source.shape.numel()) + " values but model " +
                                   spec.name + " expects " + std::to_string(spec.input.numel()));
  if (source.num_classes < 2 || source.num_classes > 256 ||
      (spec.num_classes != 0 && source.num_classes > spec.num_classes))
    return Status::InvalidArgument("the sample source's num_classes " +
                                   std::to_string(source.num_classes) + " must be in [2, " +
                                   std::to_string(spec.num_classes) + "] for model " + spec.name);
  if (spec.num_classes == 0)
    return Status::InvalidArgument("model " + spec.name +
                                   " is a split device part: split learning needs its samples in "
                                   "memory, not a sample source");
  TRIB_ASSIGN_OR_RETURN(std::unique_ptr<NativeTrainer> t,
                        Make(spec, nullptr, std::move(eval), init_seed, std::move(factory)));
  t->staging_.name = "source";
  t->staging_.height = source.shape.h;
  t->staging_.width = source.shape.w;
  t->staging_.channels = source.shape.c;
  t->staging_.num_classes = source.num_classes;
  t->source_ = std::move(source);
  return t;
}

int64_t NativeTrainer::train_size() const {
  if (source_) return source_->size;
  return train_ ? train_->size() : 0;
}

Status NativeTrainer::ReadBatch(std::span<const uint32_t> batch) {
  const auto n = static_cast<size_t>(batch.size());
  const auto sample = static_cast<size_t>(spec_.input.numel());
  staging_.images.resize(n * sample);
  staging_.labels.resize(n);
  TRIB_RETURN_IF_ERROR(source_->read(batch, staging_.images.data(), staging_.labels.data())
                           .WithContext("fit: reading a batch from the sample source"));
  for (size_t i = 0; i < n; ++i)
    if (staging_.labels[i] >= source_->num_classes)
      return Status::InvalidArgument(
          "fit: the sample source's label for sample " + std::to_string(batch[i]) + " is " +
          std::to_string(staging_.labels[i]) + ", not below num_classes " +
          std::to_string(source_->num_classes));
  TRIB_RETURN_IF_ERROR(CheckTokenIds(spec_, staging_.images, "fit: the sample source's batch"));
  if (staging_index_.size() < n) {
    staging_index_.resize(n);
    std::iota(staging_index_.begin(), staging_index_.end(), 0u);
  }
  return Status::Ok();
}

Result<std::unique_ptr<NativeTrainer>> NativeTrainer::CreateWithHead(
    const SplitModel& split, std::shared_ptr<const Dataset> train, uint64_t init_seed,
    EngineFactory factory) {
  if (!split.u_shaped())
    return Status::InvalidArgument("model " + split.whole.name +
                                   "'s cut has no head: use Create with its device part");
  TRIB_ASSIGN_OR_RETURN(
      std::unique_ptr<NativeTrainer> t,
      Create(split.device, std::move(train), nullptr, init_seed, std::move(factory)));
  t->split_ = split;
  // The device's part of the whole model's initial weights (the coordinator sends its own).
  TRIB_ASSIGN_OR_RETURN(ModelWeights whole, InitWeights(split.whole, init_seed));
  TRIB_ASSIGN_OR_RETURN(auto parts, SplitWeights(split, whole));
  t->current_ = std::move(parts.first);
  return t;
}

Status NativeTrainer::EnsureEngine(int64_t batch) {
  if (split_ && (!head_engine_ || head_engine_->max_batch() < batch)) {
    head_engine_.reset();
    TRIB_ASSIGN_OR_RETURN(head_engine_, factory_(split_->head, batch));
  }
  if (engine_ && engine_->max_batch() >= batch) return Status::Ok();
  engine_.reset();
  TRIB_ASSIGN_OR_RETURN(engine_, factory_(spec_, batch));
  return Status::Ok();
}

Status NativeTrainer::LoadParts(const ModelWeights& weights) {
  if (!split_) return engine_->LoadWeights(weights);
  TRIB_ASSIGN_OR_RETURN(auto parts, SplitDeviceWeights(*split_, weights));
  TRIB_RETURN_IF_ERROR(engine_->LoadWeights(parts.first));
  return head_engine_->LoadWeights(parts.second);
}

Status NativeTrainer::StoreParts(ModelWeights* out) {
  if (!split_) return engine_->StoreWeights(out);
  TRIB_ASSIGN_OR_RETURN(auto parts, SplitDeviceWeights(*split_, *out));
  TRIB_RETURN_IF_ERROR(engine_->StoreWeights(&parts.first));
  TRIB_RETURN_IF_ERROR(head_engine_->StoreWeights(&parts.second));
  TRIB_ASSIGN_OR_RETURN(*out, JoinDeviceWeights(*split_, parts.first, parts.second));
  return Status::Ok();
}

Result<ModelWeights> NativeTrainer::get_parameters() { return current_; }

Status NativeTrainer::PrepareFit(const ModelWeights& global, const FitConfig& cfg, int64_t* batch) {
  if (train_size() == 0) return Status::FailedPrecondition("fit: this trainer has no training set");
  if (cfg.epochs < 1)
    return Status::InvalidArgument("fit: epochs must be >= 1, got " + std::to_string(cfg.epochs));
  if (cfg.batch_size < 1 || cfg.batch_size > 65536)
    return Status::InvalidArgument("fit: batch_size must be in [1, 65536], got " +
                                   std::to_string(cfg.batch_size));
  if (!(cfg.lr > 0.0f) || !std::isfinite(cfg.lr))
    return Status::InvalidArgument("fit: lr must be a positive number");
  if (cfg.momentum < 0.0f || cfg.momentum >= 1.0f)
    return Status::InvalidArgument("fit: momentum must be in [0, 1)");
  if (cfg.weight_decay < 0.0f || cfg.proximal_mu < 0.0f)
    return Status::InvalidArgument("fit: weight_decay and proximal_mu must be >= 0");
  if (!global.same_layout(current_))
    return Status::InvalidArgument("fit: global weights do not match the layout of model " +
                                   spec_.name);
  *batch = std::min<int64_t>(cfg.batch_size, train_size());
  if (cfg.optimizer_state != "reset" && cfg.optimizer_state != "keep")
    return Status::InvalidArgument("fit: optimizer_state must be 'reset' or 'keep', not '" +
                                   cfg.optimizer_state + "'");
  TRIB_RETURN_IF_ERROR(EnsureEngine(*batch));
  // "keep": the engine's optimizer state carries over from the last fit (a new engine, made for
  // a larger batch, starts from zero).
  keep_optimizer_state_ = cfg.optimizer_state == "keep";
  engine_->KeepOptimizerState(keep_optimizer_state_);
  if (head_engine_) head_engine_->KeepOptimizerState(keep_optimizer_state_);
  if (split_ && !cfg.correction.empty())
    return Status::InvalidArgument(
        "fit: a SCAFFOLD correction for a device that holds a front and a head (the U-shaped "
        "split) is not supported");
  TRIB_RETURN_IF_ERROR(LoadParts(global));
  // Dropout's masks: from the fit's seed, so a fit seeded the same (a resumed run's, another
  // thread count's) drops the same values.
  engine_->SeedDropout(DeriveSeed(cfg.seed, {0xd70b}));
  return engine_->SetCorrection(cfg.correction).WithContext("fit");
}

Result<FitResult> NativeTrainer::fit(const ModelWeights& global, const FitConfig& cfg) {
  if (spec_.num_classes == 0)
    return Status::FailedPrecondition("fit: model " + spec_.name +
                                      " is the device part of a cut model; it trains with "
                                      "fit_split (split learning)");
  int64_t batch = 0;
  TRIB_RETURN_IF_ERROR(PrepareFit(global, cfg, &batch));
  TRIB_ASSIGN_OR_RETURN(const SgdConfig sgd, OptimizerOf(cfg));
  if (source_) {
    return RunEpochs(cfg, batch, [&](std::span<const uint32_t> b) -> Result<StepStats> {
      TRIB_RETURN_IF_ERROR(ReadBatch(b));
      return engine_->TrainStep(staging_, std::span<const uint32_t>(staging_index_).first(b.size()),
                                sgd);
    });
  }
  return RunEpochs(cfg, batch, [&](std::span<const uint32_t> b) -> Result<StepStats> {
    return engine_->TrainStep(*train_, b, sgd);
  });
}

Result<FitResult> NativeTrainer::fit_split(const ModelWeights& global, const FitConfig& cfg,
                                           SplitExchange& server) {
  if (spec_.num_classes != 0)
    return Status::FailedPrecondition("fit_split: model " + spec_.name +
                                      " is not the device part of a cut model");
  if (source_)
    return Status::FailedPrecondition("fit_split: split learning needs the samples in memory");
  int64_t batch = 0;
  TRIB_RETURN_IF_ERROR(PrepareFit(global, cfg, &batch));
  TRIB_ASSIGN_OR_RETURN(const SgdConfig sgd, OptimizerOf(cfg));
  TRIB_ASSIGN_OR_RETURN(std::vector<Shape3> shapes, LayerOutputShapes(spec_));
  const int64_t cut = shapes.back().numel();
  std::vector<float> acts;
  std::vector<uint8_t> labels;
  if (split_) {
    // The U-shape: the front to the first cut, the server part's output back, the head's loss
    // and step here (the labels never leave), the head's input gradient up, the gradient at the
    // first cut back, the front's step.
    const int64_t mid = split_->head.input.numel();
    std::vector<float> middle, head_grad;
    return RunEpochs(cfg, batch, [&](std::span<const uint32_t> b) -> Result<StepStats> {
      const int64_t n = static_cast<int64_t>(b.size());
      acts.resize(static_cast<size_t>(n * cut));
      middle.resize(static_cast<size_t>(n * mid));
      head_grad.resize(middle.size());
      labels.clear();
      for (uint32_t i : b) labels.push_back(train_->labels[i]);
      TRIB_RETURN_IF_ERROR(engine_->ForwardToCut(*train_, b, acts));
      TRIB_RETURN_IF_ERROR(server.ExchangeFront(acts, n, middle));
      TRIB_ASSIGN_OR_RETURN(StepStats st,
                            head_engine_->TrainFromCut(middle, labels, sgd, head_grad));
      TRIB_ASSIGN_OR_RETURN(CutGradient g, server.ExchangeHead(head_grad, st.loss_sum, st.correct));
      if (g.gradient.size() != acts.size())
        return Status::InvalidArgument("fit_split: the server's gradient holds " +
                                       std::to_string(g.gradient.size()) + " values for " +
                                       std::to_string(acts.size()) + " activations");
      TRIB_RETURN_IF_ERROR(engine_->BackwardFromCut(g.gradient, sgd));
      return st;
    });
  }
  return RunEpochs(cfg, batch, [&](std::span<const uint32_t> b) -> Result<StepStats> {
    acts.resize(b.size() * static_cast<size_t>(cut));
    labels.clear();
    for (uint32_t i : b) labels.push_back(train_->labels[i]);
    TRIB_RETURN_IF_ERROR(engine_->ForwardToCut(*train_, b, acts));
    TRIB_ASSIGN_OR_RETURN(CutGradient g, server.Exchange(acts, labels));
    if (g.gradient.size() != acts.size())
      return Status::InvalidArgument("fit_split: the server's gradient holds " +
                                     std::to_string(g.gradient.size()) + " values for " +
                                     std::to_string(acts.size()) + " activations");
    TRIB_RETURN_IF_ERROR(engine_->BackwardFromCut(g.gradient, sgd));
    return StepStats{g.loss_sum, g.correct, static_cast<int64_t>(b.size())};
  });
}

Result<FitResult> NativeTrainer::RunEpochs(const FitConfig& cfg, int64_t batch,
                                           const BatchStep& step) {
  const int64_t n = train_size();
  std::vector<uint32_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0u);
  Rng rng(DeriveSeed(cfg.seed, {0x5eed}));
  int64_t steps = 0, seen = 0;
  StepStats last_epoch;
  double total_seconds = 0.0;
  bool capped = false;
  for (int epoch = 1; epoch <= cfg.epochs && !capped; ++epoch) {
    rng.Shuffle(std::span<uint32_t>(order));
    StepStats ep;
    auto t0 = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < n; i += batch) {
      // The caller no longer wants the result: stop before the next batch, leaving the trainer's
      // weights as they were.
      if (cfg.stop.stop_requested())
        return Status::Aborted("fit: stopped on request after " + std::to_string(steps) +
                               " steps (FitConfig::stop)");
      const int64_t len = std::min(batch, n - i);
      TRIB_ASSIGN_OR_RETURN(StepStats st, step(std::span<const uint32_t>(order).subspan(i, len)));
      ep.loss_sum += st.loss_sum;
      ep.correct += st.correct;
      ep.count += st.count;
      ++steps;
      if (cfg.max_steps > 0 && steps >= cfg.max_steps) {
        capped = true;
        break;
      }
    }
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    total_seconds += secs;
    seen += ep.count;
    last_epoch = ep;
    TRIB_RETURN_IF_ERROR(engine_->status().WithContext("fit on " + engine_->device_name()));
    if (head_engine_)
      TRIB_RETURN_IF_ERROR(head_engine_->status().WithContext("fit on " + engine_->device_name()));
    if (!std::isfinite(ep.loss_sum))
      return Status::OutOfRange("fit: training diverged (loss is not finite) in epoch " +
                                std::to_string(epoch) + "; lower the learning rate");
    if (on_epoch_)
      on_epoch_(EpochReport{epoch, cfg.epochs, ep.loss_sum / ep.count,
                            static_cast<double>(ep.correct) / ep.count,
                            secs > 0 ? ep.count / secs : 0.0, ep.count});
  }
  FitResult res;
  res.weights = current_.ZerosLike();
  TRIB_RETURN_IF_ERROR(StoreParts(&res.weights));
  current_ = res.weights;
  res.num_examples = n;
  res.steps = steps;
  res.metrics["train_loss"] = last_epoch.loss_sum / std::max<int64_t>(1, last_epoch.count);
  res.metrics["train_accuracy"] =
      static_cast<double>(last_epoch.correct) / std::max<int64_t>(1, last_epoch.count);
  res.metrics["samples_per_second"] = total_seconds > 0 ? seen / total_seconds : 0.0;
  res.metrics["samples"] = static_cast<double>(seen);
  return res;
}

Result<EvalResult> NativeTrainer::evaluate(const ModelWeights& weights, const EvalConfig& cfg) {
  if (spec_.num_classes == 0)
    return Status::FailedPrecondition("evaluate: model " + spec_.name +
                                      " is the device part of a cut model; the coordinator "
                                      "evaluates the whole model");
  if (!eval_ || eval_->size() == 0)
    return Status::FailedPrecondition("evaluate: this trainer has no evaluation set");
  if (!weights.same_layout(current_))
    return Status::InvalidArgument("evaluate: weights do not match the layout of model " +
                                   spec_.name);
  if (cfg.batch_size < 1) return Status::InvalidArgument("evaluate: batch_size must be >= 1");
  const int64_t n =
      cfg.max_examples > 0 ? std::min(cfg.max_examples, eval_->size()) : eval_->size();
  int64_t want = std::min<int64_t>(cfg.batch_size, n);
  // With the optimizer's state kept between fits, evaluate in the batches the training engine
  // holds rather than make a larger engine (whose optimizer state would start from zero).
  if (keep_optimizer_state_ && engine_) want = std::min<int64_t>(want, engine_->max_batch());
  TRIB_RETURN_IF_ERROR(EnsureEngine(want));
  TRIB_RETURN_IF_ERROR(engine_->LoadWeights(weights));
  const int64_t batch = std::min<int64_t>(engine_->max_batch(), cfg.batch_size);
  std::vector<uint32_t> idx(static_cast<size_t>(n));
  std::iota(idx.begin(), idx.end(), 0u);
  StepStats total;
  for (int64_t i = 0; i < n; i += batch) {
    StepStats st = engine_->EvalStep(
        *eval_, std::span<const uint32_t>(idx).subspan(i, std::min(batch, n - i)));
    total.loss_sum += st.loss_sum;
    total.correct += st.correct;
    total.count += st.count;
  }
  TRIB_RETURN_IF_ERROR(engine_->status().WithContext("evaluate on " + engine_->device_name()));
  EvalResult r;
  r.num_examples = total.count;
  r.loss = total.loss_sum / std::max<int64_t>(1, total.count);
  r.accuracy = static_cast<double>(total.correct) / std::max<int64_t>(1, total.count);
  r.metrics["loss"] = r.loss;
  r.metrics["accuracy"] = r.accuracy;
  return r;
}

Result<std::vector<float>> NativeTrainer::predict(const ModelWeights& weights,
                                                  std::span<const float> inputs, int64_t count) {
  if (spec_.num_classes == 0)
    return Status::FailedPrecondition("predict: model " + spec_.name +
                                      " is the device part of a cut model");
  if (!weights.same_layout(current_))
    return Status::InvalidArgument("predict: weights do not match the layout of model " +
                                   spec_.name);
  const int64_t ss = spec_.input.numel(), k = spec_.num_classes;
  // count is compared by division first, so count * ss cannot overflow.
  if (count < 1 || count > static_cast<int64_t>(inputs.size()) / ss ||
      static_cast<int64_t>(inputs.size()) != count * ss)
    return Status::InvalidArgument(
        "predict: " + std::to_string(inputs.size()) + " input values for " + std::to_string(count) +
        " samples; model " + spec_.name + " takes " + std::to_string(ss) + " values per sample");
  TRIB_RETURN_IF_ERROR(CheckTokenIds(spec_, inputs, "predict"));
  constexpr int64_t kBatch = 256;
  if (!predict_engine_) {
    TRIB_ASSIGN_OR_RETURN(predict_engine_, CreateCpuEngine(spec_, kBatch));
  }
  TRIB_RETURN_IF_ERROR(predict_engine_->LoadWeights(weights));
  std::vector<float> probs(static_cast<size_t>(count * k));
  for (int64_t i = 0; i < count; i += kBatch) {
    const int64_t m = std::min(kBatch, count - i);
    TRIB_RETURN_IF_ERROR(predict_engine_->Predict(inputs.subspan(i * ss, m * ss),
                                                  std::span<float>(probs).subspan(i * k, m * k)));
  }
  return probs;
}

}  // namespace tributary
