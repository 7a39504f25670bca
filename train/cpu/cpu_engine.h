// CpuEngine: the Eigen reference backend of Engine (see train/engine.h).
//
// Owns flat buffers for parameters, gradients, momentum and the proximal anchor, one activation
// buffer per layer output (sized for max_batch), and two ping-pong buffers for activation
// gradients. Single-threaded: Eigen runs without OpenMP, so several engines can train in parallel
// on a thread pool (the simulator) without oversubscribing the cores.
#pragma once

#include <memory>
#include <vector>

#include "train/cpu/cpu_layer.h"
#include "train/engine.h"

namespace tributary::cpu {

class CpuEngine final : public Engine {
 public:
  static Result<std::unique_ptr<CpuEngine>> Create(const ModelSpec& spec, int64_t max_batch);

  const ModelSpec& spec() const override { return spec_; }
  std::string device_name() const override { return "cpu"; }
  int64_t max_batch() const override { return max_batch_; }
  Status LoadWeights(const ModelWeights& weights) override;
  Status StoreWeights(ModelWeights* out) override;
  StepStats TrainStep(const Dataset& data, std::span<const uint32_t> batch,
                      const SgdConfig& cfg) override;
  StepStats EvalStep(const Dataset& data, std::span<const uint32_t> batch) override;

  // For tests and benchmarks: the flat parameter and gradient buffers (layout order).
  std::span<float> params() { return params_; }
  std::span<const float> grads() const { return grads_; }
  // Forward and backward on the gathered batch without the optimizer step; fills grads().
  StepStats ComputeGradients(const Dataset& data, std::span<const uint32_t> batch);

 private:
  CpuEngine() = default;
  StepStats Forward(const Dataset& data, std::span<const uint32_t> batch, bool need_grad);

  ModelSpec spec_;
  int64_t max_batch_ = 0;
  uint64_t fingerprint_ = 0;
  std::vector<std::unique_ptr<CpuLayer>> layers_;
  std::vector<int64_t> out_sizes_;   // per-sample output size of each layer
  std::vector<AlignedVector> acts_;  // acts_[0] is the input batch; acts_[i+1] layer i's output
  std::vector<float*> act_ptr_;      // aliases for identity layers
  AlignedVector grad_a_, grad_b_;    // ping-pong activation gradients
  std::vector<uint8_t> labels_;      // labels of the current batch
  size_t first_layer_ = 0;           // first non-identity layer
  AlignedVector params_, grads_, velocity_, anchor_;
};

}  // namespace tributary::cpu
