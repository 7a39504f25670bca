#include "client/task_executor.h"

#include <fmt/format.h>
#include <algorithm>
#include <chrono>
#include <cmath>

#include "compression/codec.h"
#include "compression/update_sink.h"
#include "core/log.h"
#include "core/model_layout.h"
#include "core/non_finite.h"
#include "core/rng.h"
#include "protocol/wire.h"

namespace tributary {
namespace {

// Runs a Trainer call; an exception it throws becomes the call's error (Internal, naming it), so a
// throwing trainer is answered like a failing one (docs/embedding.md) instead of unwinding
// through the worker, where nobody would read it and the coordinator would hear nothing.
template <class F>
auto CallTrainer(F&& call) -> decltype(call()) {
  try {
    return call();
  } catch (const std::exception& e) {
    return Status::Internal(fmt::format("it threw: {}", e.what()));
  } catch (...) {
    return Status::Internal("it threw an exception that is not a std::exception");
  }
}

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// Seeds the codec's stochastic stages per round: DeriveSeed(fit seed, {round, kCodecStream}).
constexpr uint64_t kCodecStream = 0x636f646563;  // "codec"

double MetricOr(const Metrics& m, const char* key, double def) {
  auto it = m.find(key);
  return it == m.end() ? def : it->second;
}

}  // namespace

WireMetrics SendableMetrics(const Metrics& metrics) {
  WireMetrics out;
  for (const auto& [name, value] : metrics) {
    if (out.size() >= kMaxMetrics) break;
    if (name.empty() || name.size() > kMaxNameBytes || !std::isfinite(value)) continue;
    out.emplace(name, value);
  }
  return out;
}

namespace {

// An encoded payload (a compressed download), validated completely before it is decoded.
Result<ModelWeights> DecodeEncodedPayload(const ModelPayload& payload, const ModelWeights& layout,
                                          std::string_view what) {
  if (payload.layout_fingerprint != layout.fingerprint())
    return ProtocolError(
        ErrorCode::kProtocolViolation,
        fmt::format("{}: the model has layout fingerprint {:016x}, but this client's trainer has "
                    "layout {:016x} (a different model?)",
                    what, payload.layout_fingerprint, layout.fingerprint()));
  // Only codecs that can carry a model (RoundConfig::download_codec); anything else is a
  // coordinator this client does not understand.
  Result<std::unique_ptr<Codec>> codec = MakeDownloadCodec(payload.encoding);
  if (!codec.ok())
    return ProtocolError(ErrorCode::kProtocolViolation,
                         fmt::format("{}: the model's encoding '{}' is not a download codec this "
                                     "client supports: {}",
                                     what, payload.encoding, codec.status().message()));
  // The bytes come from the network: validate them completely (section size for this layout,
  // finite scales, zero padding) before decoding anything.
  Result<UpdateStats> stats = (*codec)->Validate(payload.encoded.span(), layout.size());
  if (!stats.ok())
    return ProtocolError(
        ErrorCode::kProtocolViolation,
        fmt::format("{}: the {}-encoded model ({} bytes) is not a valid encoding of this client's "
                    "{} floats: {}",
                    what, payload.encoding, payload.encoded.size(), layout.size(),
                    stats.status().message()));
  ModelWeights w = layout.ZerosLike();
  BufferSink sink(w.data());
  (*codec)->DecodeInto(payload.encoded.span(), sink, 1.0f);
  return w;
}

}  // namespace

Result<ModelWeights> PayloadToWeights(const ModelPayload& payload, const ModelWeights& layout,
                                      std::string_view what) {
  if (payload.is_encoded()) return DecodeEncodedPayload(payload, layout, what);
  if (payload.layout_fingerprint != layout.fingerprint() || payload.values.size() != layout.size())
    return ProtocolError(
        ErrorCode::kProtocolViolation,
        fmt::format("{}: the model has layout fingerprint {:016x} and {} floats, but this "
                    "client's trainer has layout {:016x} with {} floats (a different model?)",
                    what, payload.layout_fingerprint, payload.values.size(), layout.fingerprint(),
                    layout.size()));
  ModelWeights w = layout.ZerosLike();
  std::copy(payload.values.begin(), payload.values.end(), w.data().begin());
  return w;
}

TaskExecutor::TaskExecutor(std::shared_ptr<Trainer> trainer, ClientState* state)
    : trainer_(std::move(trainer)), state_(state) {}

CodecState* TaskExecutor::PrepareCodecState(const Codec& codec, size_t n) {
  if (!codec_state_loaded_ && state_) {
    Result<CodecState> saved = state_->LoadCodecState(n);
    if (saved.ok()) {
      codec_state_ = std::move(*saved);
    } else {
      Log().warn("starting with an empty error-feedback residual: {}", saved.status().ToString());
      codec_state_ = CodecState{};
    }
  }
  codec_state_loaded_ = true;
  if (codec_state_.spec != codec.spec() ||
      (!codec_state_.residual.empty() && codec_state_.residual.size() != n)) {
    codec_state_.spec = std::string(codec.spec());
    codec_state_.residual.clear();
  }
  return &codec_state_;
}

std::vector<float>& TaskExecutor::PrepareControl(const ModelWeights& global,
                                                 uint64_t model_version) {
  if (!control_loaded_ && state_) {
    Result<SavedControl> saved = state_->LoadControl(global);
    if (saved.ok()) {
      control_ = std::move(saved->values);
      control_version_ = saved->model_version;
    } else {
      if (saved.status().code() != StatusCode::kNotFound)
        Log().warn("SCAFFOLD: starting with a zero control variate: {}", saved.status().ToString());
      control_.clear();
    }
  }
  control_loaded_ = true;
  // Model versions only grow within a run: a task on an older version than the one c_i was last
  // updated in is another run's, or a coordinator's resumed from an older checkpoint.
  if (control_version_ && *control_version_ > model_version && !control_.empty()) {
    Log().warn(
        "SCAFFOLD: the control variate was updated in a task on model version {}, newer than this "
        "task's {} (a new run, or a coordinator resumed from an older checkpoint): starting from "
        "zero",
        *control_version_, model_version);
    control_.clear();
  }
  if (control_.size() != global.size()) control_.assign(global.size(), 0.0f);
  return control_;
}

Status TaskExecutor::PrepareCorrection(const TaskAssignment& task, const ModelWeights& global,
                                       const std::string& what, std::vector<float>* correction) {
  const std::span<const float> c = task.control.span();
  if (c.size() != global.size())
    return ProtocolError(ErrorCode::kProtocolViolation,
                         fmt::format("{}: SCAFFOLD's control variate has {} values, the model {}",
                                     what, c.size(), global.size()));
  for (size_t i = 0; i < c.size(); ++i)
    if (!std::isfinite(c[i]))
      return ProtocolError(
          ErrorCode::kProtocolViolation,
          fmt::format("{}: SCAFFOLD's control variate holds a value that is not finite at {}", what,
                      i));
  if (!trainer_->applies_correction())
    return ProtocolError(
        ErrorCode::kInternal,
        fmt::format("{}: the run's strategy is SCAFFOLD, and this client's trainer "
                    "does not apply its drift correction "
                    "(Trainer::applies_correction); Tributary's native trainer "
                    "does",
                    what));
  if (!(task.fit.lr > 0.0f) || !std::isfinite(task.fit.lr))
    return ProtocolError(
        ErrorCode::kProtocolViolation,
        fmt::format("{}: SCAFFOLD needs a positive fit.lr, got {}", what, task.fit.lr));
  const std::vector<float>& ci = PrepareControl(global, task.model_version);
  correction->resize(c.size());
  for (size_t i = 0; i < c.size(); ++i) (*correction)[i] = c[i] - ci[i];
  return Status::Ok();
}

Status TaskExecutor::FinishControl(const TaskAssignment& task, const ModelWeights& global,
                                   std::span<const float> trained, int64_t steps,
                                   const std::string& what, std::vector<float>* control_delta) {
  if (steps < 1)
    return ProtocolError(ErrorCode::kInternal,
                         fmt::format("{}: SCAFFOLD divides by the local steps, and the trainer "
                                     "reported {} (FitResult::steps)",
                                     what, steps));
  // Option II of the paper: c_i+ = c_i - c + (x - y) / (K * lr); the delta is c_i+ - c_i.
  const std::span<const float> c = task.control.span();
  const double inv = 1.0 / (static_cast<double>(steps) * task.fit.lr);
  std::span<const float> x = global.data(), y = trained;
  control_delta->resize(c.size());
  for (size_t i = 0; i < c.size(); ++i) {
    const auto d = static_cast<float>((static_cast<double>(x[i]) - y[i]) * inv - c[i]);
    if (!std::isfinite(d))
      return ProtocolError(ErrorCode::kInternal,
                           fmt::format("{}: SCAFFOLD's control delta is not finite at {} (the "
                                       "local run diverged?)",
                                       what, i));
    (*control_delta)[i] = d;
  }
  return Status::Ok();
}

void TaskExecutor::CommitControl(const TaskAssignment& task, const ModelWeights& global,
                                 std::span<const float> control_delta, const std::string& what) {
  for (size_t i = 0; i < control_delta.size(); ++i) control_[i] += control_delta[i];
  control_version_ = task.model_version;
  if (state_)
    if (Status s = state_->SaveControl(control_, global, task.model_version); !s.ok())
      Log().warn("{}: SCAFFOLD's control variate stays in memory only: {}", what, s.ToString());
}

Status TaskExecutor::EnsureLayout() {
  if (layout_) return Status::Ok();
  Result<ModelWeights> params = trainer_->get_parameters();
  if (!params.ok())
    return ProtocolError(ErrorCode::kInternal,
                         "trainer.get_parameters failed: " + params.status().ToString());
  layout_ = params->ZerosLike();
  return Status::Ok();
}

Result<ModelWeights> TaskExecutor::ToWeights(const ModelPayload& payload, const char* what) {
  TRIB_RETURN_IF_ERROR(EnsureLayout());
  return PayloadToWeights(payload, *layout_, what);
}

Result<ModelWeights> TaskExecutor::ToWholeWeights(const ModelPayload& payload,
                                                  const FrozenPart& frozen, const char* what,
                                                  const TensorSubset** subset) {
  *subset = nullptr;
  if (!frozen.active()) {
    if (!frozen.values.empty() || frozen.hash != 0)
      return ProtocolError(
          ErrorCode::kProtocolViolation,
          fmt::format("{}: frozen tensors without the list of federated ones", what));
    return ToWeights(payload, what);
  }
  TRIB_RETURN_IF_ERROR(EnsureLayout());
  if (!subset_ || subset_->indices() != frozen.federated) {
    Result<TensorSubset> made = TensorSubset::Create(*layout_, frozen.federated);
    if (!made.ok())
      return ProtocolError(ErrorCode::kProtocolViolation,
                           fmt::format("{}: the task's federated tensors do not fit this client's "
                                       "model of {} tensors: {}",
                                       what, layout_->num_tensors(), made.status().message()));
    subset_ = std::move(*made);
  }
  Result<ModelWeights> part = PayloadToWeights(payload, subset_->SelectedLayout(), what);
  if (!part.ok()) return part.status();
  TRIB_ASSIGN_OR_RETURN(ModelWeights rest, FrozenRest(frozen, *subset_, what));
  Result<ModelWeights> whole = subset_->Join(*part, rest);
  if (!whole.ok())
    return ProtocolError(ErrorCode::kProtocolViolation,
                         fmt::format("{}: {}", what, whole.status().message()));
  *subset = &*subset_;
  return whole;
}

Result<ModelWeights> TaskExecutor::FrozenRest(const FrozenPart& frozen, const TensorSubset& subset,
                                              const char* what) {
  ModelWeights rest = subset.RestLayout();
  if (!frozen.values.empty()) {
    if (frozen.values.size() != rest.size())
      return ProtocolError(ErrorCode::kProtocolViolation,
                           fmt::format("{}: the task sends {} values of frozen tensors; this "
                                       "client's model has {} in the tensors not federated",
                                       what, frozen.values.size(), rest.size()));
    std::copy(frozen.values.begin(), frozen.values.end(), rest.data().begin());
    if (rest.content_hash() != frozen.hash)
      return ProtocolError(ErrorCode::kProtocolViolation,
                           fmt::format("{}: the frozen tensors sent hash to {:016x}, but the task "
                                       "names {:016x}",
                                       what, rest.content_hash(), frozen.hash));
    kept_frozen_hash_ = frozen.hash;
    kept_frozen_ = frozen.values;  // shares the received buffer
    return rest;
  }
  if (kept_frozen_.empty() || kept_frozen_hash_ != frozen.hash ||
      kept_frozen_.size() != rest.size())
    return ProtocolError(
        ErrorCode::kProtocolViolation,
        kept_frozen_.empty()
            ? fmt::format("{}: the task carries only the model's unfrozen tensors and names frozen "
                          "ones (hash {:016x}) this client was never sent",
                          what, frozen.hash)
            : fmt::format("{}: the task names frozen tensors with hash {:016x}; this client kept "
                          "{} values with hash {:016x} (another run's?)",
                          what, frozen.hash, kept_frozen_.size(), kept_frozen_hash_));
  std::copy(kept_frozen_.begin(), kept_frozen_.end(), rest.data().begin());
  return rest;
}

Result<UpdateSubmission> TaskExecutor::Fit(const TaskAssignment& task, TaskReport* report,
                                           SplitExchange* split) {
  const auto t0 = std::chrono::steady_clock::now();
  if (report) {
    report->kind = TaskReport::Kind::kFit;
    report->round = task.round;
    report->model_version = task.model_version;
    report->codec = task.codec.spec;
  }
  const std::string what = fmt::format("task for round {}", task.round);
  // Split learning's tasks (docs/split.md) train a device part through the coordinator's server
  // part: the host gives the channel to it; without one, this client trains whole models.
  if (task.split_cut != 0 && split == nullptr)
    return ProtocolError(ErrorCode::kProtocolViolation,
                         fmt::format("{}: a split-learning task (cut before layer {}); this client "
                                     "trains whole models",
                                     what, task.split_cut));
  if (task.split_cut == 0 && split != nullptr)
    return ProtocolError(ErrorCode::kProtocolViolation,
                         fmt::format("{}: not a split-learning task, but this client trains the "
                                     "device part of a cut model",
                                     what));
  Result<std::unique_ptr<Codec>> codec = MakeCodec(task.codec.spec);
  if (!codec.ok())
    return ProtocolError(ErrorCode::kProtocolViolation,
                         fmt::format("{}: codec '{}' is not supported by this client ({})", what,
                                     task.codec.spec, codec.status().message()));
  if (task.frozen.active() && split != nullptr)
    return ProtocolError(
        ErrorCode::kProtocolViolation,
        fmt::format("{}: a split-learning task that federates only some tensors", what));
  const TensorSubset* subset = nullptr;
  TRIB_ASSIGN_OR_RETURN(ModelWeights global,
                        ToWholeWeights(task.model, task.frozen, what.c_str(), &subset));
  if (on_global_model_) on_global_model_(global, task.round, task.model_version);
  // What travels: the whole model, or only its federated tensors (FrozenPart).
  std::optional<ModelWeights> federated_global;
  if (subset) federated_global = subset->Selected(global).value();
  const ModelWeights& sent = subset ? *federated_global : global;

  // SCAFFOLD: the drift correction c - c_i rides in the fit's config (zero on frozen tensors).
  std::vector<float> correction, control_delta;
  const bool scaffold = !task.control.empty();
  if (scaffold) {
    TRIB_RETURN_IF_ERROR(PrepareCorrection(task, sent, what, &correction));
    if (subset) {
      ModelWeights part = sent.ZerosLike();
      std::copy(correction.begin(), correction.end(), part.data().begin());
      ModelWeights whole = subset->Join(part, subset->RestLayout()).value();
      correction.assign(whole.data().begin(), whole.data().end());
    }
  }
  FitConfig config = task.fit;
  config.correction = correction;
  Result<FitResult> fit = CallTrainer([&] {
    return split != nullptr ? trainer_->fit_split(global, config, *split)
                            : trainer_->fit(global, config);
  });
  if (task.fit.stop.stop_requested())
    return Status::Aborted(fmt::format(
        "{}: stopped: the result is no longer wanted (FitConfig::stop), nothing was encoded",
        what));
  if (!fit.ok())
    return ProtocolError(ErrorCode::kInternal,
                         fmt::format("{}: trainer.fit failed: {}", what, fit.status().ToString()));
  if (!fit->weights.same_layout(global) || fit->weights.size() != global.size())
    return ProtocolError(ErrorCode::kInternal,
                         fmt::format("{}: trainer.fit returned weights of another layout: {}", what,
                                     LayoutDifference(LayoutOf(global), "the global model",
                                                      LayoutOf(fit->weights), "fit's result")));
  // What the coordinator would refuse anyway, named here where the app can see it (the run's
  // error said only that too few clients remained).
  if (fit->num_examples < 1)
    return ProtocolError(ErrorCode::kInternal,
                         fmt::format("{}: trainer.fit returned num_examples {}: an update must "
                                     "count the examples it trained on (at least 1)",
                                     what, fit->num_examples));
  if (const std::optional<NonFinite> bad = FindNonFinite(fit->weights))
    return ProtocolError(
        ErrorCode::kInternal,
        fmt::format("{}: trainer.fit returned a non-finite value ({}) in tensor '{}' at index {}",
                    what, bad->value, bad->tensor, bad->index));
  const double fit_seconds = Seconds(t0);
  // The trained weights of what travels: the whole model, or its federated tensors.
  ModelWeights trained = subset ? subset->Selected(fit->weights).value() : std::move(fit->weights);
  if (scaffold)
    TRIB_RETURN_IF_ERROR(
        FinishControl(task, sent, trained.data(), fit->steps, what, &control_delta));

  // delta = new - global, computed in place over the new weights. With a compressed download
  // (ModelPayload::is_encoded) `global` is the decoded model this client trained from, not the
  // coordinator's exact one, which the coordinator applies the aggregate to: the standard
  // approximation of quantized downloads (the quantization error stays out of the delta).
  std::span<float> delta = trained.data();
  std::span<const float> g = sent.data();
  for (size_t i = 0; i < delta.size(); ++i) delta[i] -= g[i];
  CodecState* codec_state =
      (*codec)->uses_error_feedback() ? PrepareCodecState(**codec, delta.size()) : nullptr;
  const uint64_t seed = DeriveSeed(task.fit.seed, {task.round, kCodecStream});
  // The trained weights' buffer now holds the delta; the codec may hand it over as the update's
  // bytes (dense does) instead of copying it.
  auto owner = std::make_shared<const ModelWeights>(std::move(trained));
  Result<SharedBytes> bytes = (*codec)->EncodeShared(owner, owner->data(), codec_state, seed);
  if (!bytes.ok())
    return ProtocolError(ErrorCode::kInternal,
                         fmt::format("{}: encoding the update with '{}' failed: {}", what,
                                     task.codec.spec, bytes.status().ToString()));
  if (codec_state && state_) {
    if (Status s = state_->SaveCodecState(*codec_state); !s.ok())
      Log().warn("{}: the error-feedback residual stays in memory only: {}", what, s.ToString());
  }
  // c_i moves once the update is made (a failed encode leaves it), as the residual does.
  if (scaffold) CommitControl(task, sent, control_delta, what);

  UpdateSubmission out;
  out.round = task.round;
  out.task_id = task.task_id;
  out.model_version = task.model_version;
  out.num_examples = static_cast<uint64_t>(fit->num_examples);
  Metrics metrics = fit->metrics;
  metrics["fit_seconds"] = fit_seconds;
  out.metrics = SendableMetrics(metrics);
  out.update.codec = task.codec.spec;
  out.update.layout_fingerprint = sent.fingerprint();
  out.update.num_floats = sent.size();
  out.update.bytes = std::move(*bytes);
  if (!control_delta.empty()) out.control_delta = SharedFloats(std::move(control_delta));
  if (report) {
    report->num_examples = fit->num_examples;
    report->loss = MetricOr(fit->metrics, "train_loss", 0.0);
    report->accuracy = MetricOr(fit->metrics, "train_accuracy", 0.0);
    report->update_bytes = out.update.bytes.size() + out.control_delta.size() * sizeof(float);
    report->seconds = Seconds(t0);
  }
  return out;
}

Result<EvaluateResult> TaskExecutor::Evaluate(const EvaluateTask& task, TaskReport* report) {
  const auto t0 = std::chrono::steady_clock::now();
  if (report) {
    report->kind = TaskReport::Kind::kEvaluate;
    report->round = task.round;
    report->model_version = task.model_version;
  }
  const std::string what = fmt::format("evaluation for round {}", task.round);
  const TensorSubset* subset = nullptr;
  TRIB_ASSIGN_OR_RETURN(ModelWeights weights,
                        ToWholeWeights(task.model, task.frozen, what.c_str(), &subset));
  if (on_global_model_) on_global_model_(weights, task.round, task.model_version);
  EvalConfig config;
  config.batch_size = task.batch_size;
  config.max_examples = task.max_examples;
  Result<EvalResult> eval = CallTrainer([&] { return trainer_->evaluate(weights, config); });
  if (!eval.ok())
    return ProtocolError(ErrorCode::kInternal, fmt::format("{}: trainer.evaluate failed: {}", what,
                                                           eval.status().ToString()));
  if (eval->num_examples < 0 || !std::isfinite(eval->loss) || !std::isfinite(eval->accuracy))
    return ProtocolError(ErrorCode::kInternal,
                         fmt::format("{}: trainer.evaluate returned num_examples {}, loss {}, "
                                     "accuracy {}",
                                     what, eval->num_examples, eval->loss, eval->accuracy));
  EvaluateResult out;
  out.round = task.round;
  out.model_version = task.model_version;
  out.num_examples = static_cast<uint64_t>(eval->num_examples);
  out.loss = eval->loss;
  out.accuracy = eval->accuracy;
  out.metrics = SendableMetrics(eval->metrics);
  if (report) {
    report->num_examples = eval->num_examples;
    report->loss = eval->loss;
    report->accuracy = eval->accuracy;
    report->seconds = Seconds(t0);
  }
  return out;
}

}  // namespace tributary
