// CudaEngine: the CUDA backend of Engine (train/engine.h). Same layers, loss and SGD as the CPU
// reference, with GEMMs on cuBLAS (plain FP32) and kernels for the rest (train/cuda/*.cu).
//
// On the device it keeps the flat parameter, gradient, momentum and proximal-anchor buffers, one
// activation buffer per layer output and two ping-pong gradient buffers (all sized for max_batch),
// and the datasets it has seen (DatasetCache). Weights cross the bus only in LoadWeights and
// StoreWeights; a step uploads only its batch's indices and reads back its loss and accuracy.
//
// Errors: Engine's TrainStep/EvalStep return StepStats, not Status. A CUDA failure inside them
// (device lost, out of memory, kernel fault) is logged once (an error line, core/log.h), kept as
// status(), and makes this and every later step return a NaN loss; LoadWeights/StoreWeights then
// return the kept Status, so the failure reaches the caller. Out-of-range batch sizes or sample
// indices are programming errors and abort (TRIB_CHECK), as in the CPU engine.
//
// Not thread-safe: one thread at a time. Engines on the same GPU are independent (own stream).
#pragma once

#include <memory>
#include <vector>

#include "train/cuda/cuda_context.h"
#include "train/cuda/cuda_layer.h"
#include "train/cuda/dataset_cache.h"
#include "train/cuda/device_buffer.h"
#include "train/cuda/kernels.h"
#include "train/engine.h"

namespace tributary::cuda {

class CudaEngine final : public Engine {
 public:
  static Result<std::unique_ptr<CudaEngine>> Create(const ModelSpec& spec, int64_t max_batch,
                                                    int device_index);
  ~CudaEngine() override;

  const ModelSpec& spec() const override { return spec_; }
  std::string device_name() const override;
  int64_t max_batch() const override { return max_batch_; }
  Status LoadWeights(const ModelWeights& weights) override;
  void KeepOptimizerState(bool keep) override { keep_optimizer_state_ = keep; }
  void SeedDropout(uint64_t seed) override {
    dropout_seed_ = seed;
    dropout_step_ = 0;
  }
  Status StoreWeights(ModelWeights* out) override;
  Status SetCorrection(std::span<const float> correction) override;
  StepStats TrainStep(const Dataset& data, std::span<const uint32_t> batch,
                      const SgdConfig& cfg) override;
  StepStats EvalStep(const Dataset& data, std::span<const uint32_t> batch) override;
  // Split learning (engine.h): the same steps as the CPU engine's, on the device. Activations and
  // gradients cross the bus once a step each way; a CUDA failure is kept as status() too.
  Status ForwardToCut(const Dataset& data, std::span<const uint32_t> batch,
                      std::span<float> acts) override;
  Status BackwardFromCut(std::span<const float> grad, const SgdConfig& cfg) override;
  Status ForwardToCut(std::span<const float> inputs, std::span<float> acts) override;
  Status BackwardFromCut(std::span<const float> grad, const SgdConfig& cfg,
                         std::span<float> input_grad) override;
  Result<StepStats> TrainFromCut(std::span<const float> acts, std::span<const uint8_t> labels,
                                 const SgdConfig& cfg, std::span<float> grad) override;

  // The first CUDA failure of a step, or OK.
  Status status() const override { return status_; }
  // For tests: forward and backward without the optimizer step; then DownloadGradients() reads
  // them.
  Result<StepStats> ComputeGradients(const Dataset& data, std::span<const uint32_t> batch);
  Status DownloadGradients(std::vector<float>* out) const;
  int64_t dataset_uploads() const { return datasets_.uploads(); }

 private:
  CudaEngine() = default;
  // Gathers the batch on the device and runs the forward pass and the loss (with its gradient when
  // need_grad); the totals land in stats_host_ after the next synchronization.
  Status Forward(const Dataset& data, std::span<const uint32_t> batch, bool need_grad);
  // The parts of Forward: the batch gathered into act_ptr_[0] (labels into batch_labels_), the
  // layers, the loss.
  Status Gather(const Dataset& data, std::span<const uint32_t> batch);
  // training: Dropout drops (a TrainStep's forward), else it is the identity.
  Status ForwardLayers(int64_t n, bool training = false);
  Status Loss(int64_t n, bool need_grad);
  // Backward from grad_a_; with input_grad, the first layer's input gradient too, and *input_grad
  // then points at it (a device buffer).
  Status Backward(int64_t n, float** input_grad = nullptr);
  Status ApplySgd(const SgdConfig& cfg);
  // Keeps the first failure as status_ and returns it.
  // BackwardFromCut after its checks (input_grad empty: the front's, which needs none).
  Status BackwardThroughCut(std::span<const float> grad, const SgdConfig& cfg,
                            std::span<float> input_grad);
  Status Keep(Status s);
  Status Step(const Dataset& data, std::span<const uint32_t> batch, const SgdConfig* sgd,
              StepStats* out);
  StepStats Failed(Status s, int64_t n);

  ModelSpec spec_;
  int64_t max_batch_ = 0;
  uint64_t fingerprint_ = 0;
  size_t num_params_ = 0;
  std::unique_ptr<CudaContext> ctx_;  // declared first among device state: destroyed last
  std::vector<std::unique_ptr<CudaLayer>> layers_;
  std::vector<int64_t> out_sizes_;  // per-sample output size of each layer
  std::vector<DeviceBuffer<float>>
      acts_;                             // acts_[0] the gathered input; acts_[i+1] layer i's output
  std::vector<float*> act_ptr_;          // aliases for identity layers
  DeviceBuffer<float> grad_a_, grad_b_;  // ping-pong activation gradients
  // skip_grads_[i + 1]: the gradient add layers send back to layer i's output (unallocated for
  // outputs no add layer reads).
  std::vector<DeviceBuffer<float>> skip_grads_;
  DeviceBuffer<float> params_, grads_, velocity_, anchor_;
  std::vector<std::pair<int64_t, int64_t>> trainable_;  // TrainableRanges: what the optimizer steps
  DeviceBuffer<float> second_moment_;  // Adam's v (made on its first step); its m is velocity_
  int64_t adam_step_ = 0;              // Adam's t: updates since the state was last reset
  bool keep_optimizer_state_ = false;  // LoadWeights then leaves the optimizer's state
  int64_t positions_ = 0;              // SequencePositions(spec_): 0 without lengths
  uint64_t dropout_seed_ = 0;          // SeedDropout's seed
  uint64_t dropout_step_ = 0;          // TrainSteps since SeedDropout: the masks' step
  DeviceBuffer<float> correction_;     // empty (unallocated) or num_params_; see has_correction_
  bool has_correction_ = false;
  DeviceBuffer<uint32_t> batch_idx_;
  DeviceBuffer<uint8_t> batch_labels_;
  DeviceBuffer<int32_t> lengths_;  // the batch's sequence lengths (SequencePositions > 0)
  DeviceBuffer<LossTotals> totals_;
  PinnedBuffer<uint32_t> idx_host_;
  PinnedBuffer<LossTotals> totals_host_;
  DatasetCache datasets_;
  size_t first_layer_ = 0;  // first non-identity layer
  int64_t cut_batch_ = 0;   // a device part: samples of the last ForwardToCut (0: none pending)
  Status status_;
};

}  // namespace tributary::cuda
