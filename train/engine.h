// Engine: a model instantiated on one backend (CPU or CUDA), holding its parameters, gradients and
// optimizer state. NativeTrainer drives an Engine; it never sees the backend.
//
// Data is passed as a Dataset plus the indices of the samples in a batch, so a GPU backend can
// upload a dataset once and gather batches on the device.
//
// Not thread-safe: one thread drives an Engine at a time. Distinct Engines are independent.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "train/data/dataset.h"
#include "train/model_spec.h"
#include "tributary/model_weights.h"
#include "tributary/result.h"

namespace tributary {

// The local optimizer's step (train/sgd.h), with PyTorch's semantics. SGD with momentum, weight
// decay and a FedProx proximal term:
//   g = grad + weight_decay * w + proximal_mu * (w - w_anchor)
//   v = momentum * v + g;  w -= lr * v        (v = g when momentum is 0)
// Adam (kAdam; AdamW, kAdamW, decays w by lr * weight_decay first and leaves it out of g), at step
// t = 1, 2, ... since the weights were loaded:
//   m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g^2
//   w -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
// and, when the engine holds a SCAFFOLD correction (Engine::SetCorrection), then w -= lr * corr.
enum class OptimizerKind { kSgd, kAdam, kAdamW };
struct SgdConfig {
  float lr = 0.05f;
  float momentum = 0.0f;
  float weight_decay = 0.0f;
  float proximal_mu = 0.0f;
  OptimizerKind optimizer = OptimizerKind::kSgd;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
};

struct StepStats {
  double loss_sum = 0.0;  // summed over the samples (divide by count for the mean)
  int64_t correct = 0;
  int64_t count = 0;
};

class Engine {
 public:
  virtual ~Engine() = default;
  virtual const ModelSpec& spec() const = 0;
  // "cpu", or "cuda:0 (NVIDIA H200)".
  virtual std::string device_name() const = 0;
  // Largest batch TrainStep/EvalStep accept.
  virtual int64_t max_batch() const = 0;

  // Copies weights in (layout must match the spec), clears the momentum and the correction, and
  // makes these weights the proximal anchor w_anchor. With KeepOptimizerState(true) the
  // optimizer's state (momentum, Adam's moments and step count) is left as it was instead.
  virtual Status LoadWeights(const ModelWeights& weights) = 0;
  virtual void KeepOptimizerState(bool keep) = 0;
  // Dropout layers' masks (train/dropout_math.h) in the TrainSteps after this call are keyed by
  // `seed` and the step's count since the call, so a fit seeded the same drops the same values
  // whatever the thread count or backend. NativeTrainer seeds it from each fit's seed.
  virtual void SeedDropout(uint64_t seed) = 0;
  // SCAFFOLD's drift correction c - c_i (one value per parameter, layout order): every TrainStep
  // after this one ends with w -= lr * correction, outside the momentum (the form of NIID-Bench's
  // and Flower's SCAFFOLD clients). An empty span clears it. InvalidArgument when the size is not
  // the model's parameter count. Every backend has it (CPU and CUDA).
  virtual Status SetCorrection(std::span<const float> correction) = 0;
  // Copies the current weights out into `out`, which must have the spec's layout.
  virtual Status StoreWeights(ModelWeights* out) = 0;

  // One SGD step on the samples data[batch[i]]. batch.size() must be in [1, max_batch()].
  virtual StepStats TrainStep(const Dataset& data, std::span<const uint32_t> batch,
                              const SgdConfig& cfg) = 0;
  // Loss and accuracy on the samples, without changing anything.
  virtual StepStats EvalStep(const Dataset& data, std::span<const uint32_t> batch) = 0;
  // Class probabilities (the softmax of the logits) for the n = inputs.size() / spec().input
  // .numel() samples stored one after another in `inputs` (HWC floats), written row by row to
  // `probs` (n * spec().num_classes floats). n must be in [1, max_batch()]; InvalidArgument names
  // the size that does not fit. Backends without it return Unimplemented (the CPU engine has it).
  virtual Status Predict(std::span<const float> inputs, std::span<float> probs) {
    (void)inputs;
    (void)probs;
    return Status::Unimplemented("predict is not implemented on " + device_name());
  }

  // Split learning (train/model_split.h). An engine of a device part (spec().num_classes == 0):
  // ForwardToCut runs the samples data[batch[i]] (batch.size() in [1, max_batch()]) to the cut and
  // writes their activations, sample after sample, to `acts` (batch.size() * the cut's numel
  // floats); BackwardFromCut then takes the gradient of the batch's mean loss with respect to
  // those activations (the same size), computes the part's gradients and takes one SGD step. An
  // engine of a server part: TrainFromCut takes n = labels.size() samples' activations at the cut
  // (n * spec().input.numel() floats), computes the mean softmax cross-entropy over them, writes
  // its gradient with respect to the activations to `grad` (the same size), takes one SGD step and
  // returns the loss and accuracy. Sizes and labels are checked first (InvalidArgument names what
  // does not fit; FailedPrecondition for a call on the wrong part or a backward with no forward
  // before it). With one thread, ForwardToCut + TrainFromCut + BackwardFromCut is bitwise the
  // whole model's TrainStep; with T threads, too, when both parts use T. Every backend has them
  // (CPU and CUDA), with the argument checks of train/split_checks.h.
  virtual Status ForwardToCut(const Dataset& data, std::span<const uint32_t> batch,
                              std::span<float> acts) = 0;
  virtual Status BackwardFromCut(std::span<const float> grad, const SgdConfig& cfg) = 0;
  // The U-shaped split's middle part (a part with num_classes 0 whose input is the first cut's
  // activations): ForwardToCut takes n = inputs.size() / spec().input.numel() samples' values
  // (n in [1, max_batch()]) instead of a dataset's, and BackwardFromCut with `input_grad` also
  // writes the gradient with respect to those inputs (n * spec().input.numel() floats, sent down
  // to the device's front). Checked as above; together with the front's and the head's steps
  // they are the whole model's TrainStep bit for bit.
  virtual Status ForwardToCut(std::span<const float> inputs, std::span<float> acts) = 0;
  virtual Status BackwardFromCut(std::span<const float> grad, const SgdConfig& cfg,
                                 std::span<float> input_grad) = 0;
  virtual Result<StepStats> TrainFromCut(std::span<const float> acts,
                                         std::span<const uint8_t> labels, const SgdConfig& cfg,
                                         std::span<float> grad) = 0;

  // OK, or the first device failure (out of memory, device lost) since the engine was made. Steps
  // return StepStats, so a backend that can fail mid-step keeps its error here; callers check it
  // after each epoch. The CPU engine never fails mid-step.
  virtual Status status() const { return Status::Ok(); }
};

// The Eigen reference backend (train/cpu/), training each batch on `threads` threads (the caller's
// and threads - 1 of its own; train/cpu/cpu_engine.h says how the batch is split, and that results
// are deterministic for a seed and a thread count).
Result<std::unique_ptr<Engine>> CreateCpuEngine(const ModelSpec& spec, int64_t max_batch,
                                                int threads = 1);

}  // namespace tributary
