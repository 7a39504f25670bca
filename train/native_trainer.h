// NativeTrainer: the Trainer (include/tributary/trainer.h) built on Tributary's own engines.
//
// It trains a zoo model (train/model_spec.h) on an in-memory Dataset with SGD, on the CPU engine or
// on another Engine supplied by a factory (the CUDA backend). Deterministic for a seed: the same
// global weights, data and FitConfig give bitwise-identical results on the same backend. fit()
// checks FitConfig::stop before every batch: once it is requested, fit returns Aborted and the
// trainer's weights stay as they were before the call.
// Not thread-safe; use one NativeTrainer per thread (they share datasets read-only).
#pragma once

#include <functional>
#include <memory>
#include <optional>

#include "train/data/dataset.h"
#include "train/engine.h"
#include "train/model_split.h"
#include "tributary/trainer.h"

namespace tributary {

// Makes an engine for a spec and a maximum batch; lets callers choose the backend.
using EngineFactory =
    std::function<Result<std::unique_ptr<Engine>>(const ModelSpec&, int64_t max_batch)>;

// A training set the app reads on demand (data that does not fit in memory): `size` samples of
// `shape`'s values each with a class id below num_classes. read(indices, features, labels) fills
// indices.size() samples' features (HWC, sample after sample) and labels, in the order of
// `indices` (each < size); a non-OK status ends the fit with it. fit() asks for one batch at a time
// in the same shuffled order as for an in-memory set, so the same samples give the same bits.
struct BatchSource {
  Shape3 shape;
  int num_classes = 0;
  int64_t size = 0;
  std::function<Status(std::span<const uint32_t> indices, float* features, uint8_t* labels)> read;
};

struct EpochReport {
  int epoch = 0;  // 1-based
  int epochs = 0;
  double loss = 0.0;      // mean training loss over the epoch
  double accuracy = 0.0;  // training accuracy over the epoch
  double samples_per_second = 0.0;
  int64_t samples = 0;
};

class NativeTrainer final : public Trainer {
 public:
  // Either set may be null (but not both): fit() then fails with FailedPrecondition without a
  // training set, evaluate() without an evaluation set (a coordinator evaluates only).
  // Initial parameters come from InitWeights(spec, init_seed). A null factory means the CPU engine.
  static Result<std::unique_ptr<NativeTrainer>> Create(const ModelSpec& spec,
                                                       std::shared_ptr<const Dataset> train,
                                                       std::shared_ptr<const Dataset> eval,
                                                       uint64_t init_seed,
                                                       EngineFactory factory = nullptr);

  // As Create, training on samples read from `source` batch by batch (BatchSource). The engine
  // stages one batch at a time; each batch's labels and token ids are checked as they arrive.
  // Trains through fit() only (split learning needs its samples in memory).
  static Result<std::unique_ptr<NativeTrainer>> CreateStreaming(const ModelSpec& spec,
                                                                BatchSource source,
                                                                std::shared_ptr<const Dataset> eval,
                                                                uint64_t init_seed,
                                                                EngineFactory factory = nullptr);

  // The U-shaped split's device (model_split.h, split.u_shaped()): it trains split.device (the
  // front) and split.head (the layers after the server's middle part, with the loss), and its
  // weights are the front's followed by the head's (DeviceLayout). It trains only through
  // fit_split; its initial weights are the device's part of InitWeights(split.whole, init_seed).
  static Result<std::unique_ptr<NativeTrainer>> CreateWithHead(const SplitModel& split,
                                                               std::shared_ptr<const Dataset> train,
                                                               uint64_t init_seed,
                                                               EngineFactory factory = nullptr);

  Result<ModelWeights> get_parameters() override;
  // A device part (a spec with num_classes 0, model_split.h) trains only through fit_split, and
  // cannot evaluate or predict (FailedPrecondition).
  Result<FitResult> fit(const ModelWeights& global, const FitConfig& config) override;
  // Split learning: every batch runs ForwardToCut, server.Exchange, BackwardFromCut (with a head:
  // ForwardToCut, server.ExchangeFront, the head's TrainFromCut, server.ExchangeHead,
  // BackwardFromCut). The samples' order, the batches and the SGD are fit()'s, so with an exact
  // server (raw floats, the same SgdConfig) the parts train to the whole model's fit() bits.
  Result<FitResult> fit_split(const ModelWeights& global, const FitConfig& config,
                              SplitExchange& server) override;
  // SCAFFOLD's correction is applied by the engine after every step (Engine::SetCorrection).
  bool applies_correction() const override { return true; }
  Result<EvalResult> evaluate(const ModelWeights& weights, const EvalConfig& config) override;
  // Class probabilities (the outputs or their sigmoids for a spec whose loss is MSE or BCE:
  // cpu::Predictions), count rows of spec().num_classes, on a CPU engine of its own (whatever
  // engine fit() uses), in batches of up to 256 samples. Needs no training or evaluation set.
  Result<std::vector<float>> predict(const ModelWeights& weights, std::span<const float> inputs,
                                     int64_t count) override;

  // Called after each local epoch of fit(); for progress output.
  void set_epoch_callback(std::function<void(const EpochReport&)> cb) { on_epoch_ = std::move(cb); }
  const ModelSpec& spec() const { return spec_; }
  // The engine's device, or "" before the first fit/evaluate.
  std::string device_name() const { return engine_ ? engine_->device_name() : ""; }

 private:
  NativeTrainer() = default;
  // Create without its check that a set is non-empty (CreateStreaming's training set is a source).
  static Result<std::unique_ptr<NativeTrainer>> Make(const ModelSpec& spec,
                                                     std::shared_ptr<const Dataset> train,
                                                     std::shared_ptr<const Dataset> eval,
                                                     uint64_t init_seed, EngineFactory factory);
  Status EnsureEngine(int64_t batch);
  // fit()'s checks of the config and the weights; loads the engine. *batch: the batch size.
  Status PrepareFit(const ModelWeights& global, const FitConfig& cfg, int64_t* batch);
  // fit()'s loop over epochs and batches, each batch's step taken by `step`; then the result.
  using BatchStep = std::function<Result<StepStats>(std::span<const uint32_t> batch)>;
  Result<FitResult> RunEpochs(const FitConfig& cfg, int64_t batch, const BatchStep& step);

  // The training set's size: the in-memory set's or the source's.
  int64_t train_size() const;
  // CreateStreaming's source: reads the samples of `batch` into staging_ and checks them.
  Status ReadBatch(std::span<const uint32_t> batch);

  ModelSpec spec_;
  std::shared_ptr<const Dataset> train_, eval_;
  std::optional<BatchSource> source_;
  Dataset staging_;                      // the source's current batch
  std::vector<uint32_t> staging_index_;  // 0, 1, ... for the staged batch
  EngineFactory factory_;
  // The weights `w` (current_'s layout) into the engines, and back: the front's and the head's
  // parts with a head, all of them otherwise.
  Status LoadParts(const ModelWeights& w);
  Status StoreParts(ModelWeights* out);

  std::unique_ptr<Engine> engine_;
  std::optional<SplitModel> split_;         // CreateWithHead's cut
  std::unique_ptr<Engine> head_engine_;     // the head's engine (with engine_, the front's)
  std::unique_ptr<Engine> predict_engine_;  // CPU, made by the first predict()
  bool keep_optimizer_state_ = false;       // the last fit's FitConfig::optimizer_state == "keep"
  ModelWeights current_;
  std::function<void(const EpochReport&)> on_epoch_;
};

}  // namespace tributary
