// CpuEngine: the Eigen reference backend of Engine (see train/engine.h).
//
// Owns flat buffers for parameters, gradients, momentum and the proximal anchor, and one replica
// of the layers per thread: each replica has its own activation buffers (one per layer output,
// sized for its share of max_batch), two ping-pong buffers for activation gradients, and its own
// gradient buffer (replica 0 writes the engine's).
//
// Threads: with threads = T > 1 a step splits its batch of n samples into min(T, n) contiguous
// shards of nearly equal size; replica i computes the forward and backward pass of shard i on
// thread i, each scaling its loss gradient by 1/n (the whole batch's mean). Then each thread sums
// one slice of the parameters' gradients over the replicas, in replica order, and applies the SGD
// update to that slice. The result is bitwise deterministic for a seed and a thread count (the
// shards and the order of every sum are fixed), but differs in the last bits between thread
// counts: a sum over shards rounds differently from one over the whole batch. T = 1 is the
// single-threaded engine, with no threads started. The GEMMs' instruction set is chosen at run
// time (gemm.h). The simulator uses T = 1 per virtual client, so clients train in parallel on its
// pool without oversubscribing the cores.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "train/cpu/cpu_layer.h"
#include "train/cpu/fork_join.h"
#include "train/engine.h"

namespace tributary::cpu {

class CpuEngine final : public Engine {
 public:
  // threads in [1, 256].
  static Result<std::unique_ptr<CpuEngine>> Create(const ModelSpec& spec, int64_t max_batch,
                                                   int threads = 1);

  const ModelSpec& spec() const override { return spec_; }
  std::string device_name() const override;
  int64_t max_batch() const override { return max_batch_; }
  int threads() const { return static_cast<int>(replicas_.size()); }
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
  Status Predict(std::span<const float> inputs, std::span<float> probs) override;
  Status ForwardToCut(const Dataset& data, std::span<const uint32_t> batch,
                      std::span<float> acts) override;
  Status BackwardFromCut(std::span<const float> grad, const SgdConfig& cfg) override;
  Status ForwardToCut(std::span<const float> inputs, std::span<float> acts) override;
  Status BackwardFromCut(std::span<const float> grad, const SgdConfig& cfg,
                         std::span<float> input_grad) override;
  Result<StepStats> TrainFromCut(std::span<const float> acts, std::span<const uint8_t> labels,
                                 const SgdConfig& cfg, std::span<float> grad) override;

  // For tests and benchmarks: the flat parameter and gradient buffers (layout order).
  std::span<float> params() { return params_; }
  std::span<const float> grads() const { return grads_; }
  // Forward and backward on the gathered batch without the optimizer step; fills grads().
  StepStats ComputeGradients(const Dataset& data, std::span<const uint32_t> batch);

 private:
  // One copy of the layers and their buffers, for one thread's shard of a batch.
  struct Replica {
    std::vector<std::unique_ptr<CpuLayer>> layers;
    std::vector<AlignedVector> acts;  // acts[0] is the input shard; acts[i+1] layer i's output
    std::vector<float*> act_ptr;      // aliases for identity layers
    AlignedVector grad_a, grad_b;     // ping-pong activation gradients
    // skip_grads[i + 1]: the gradient that add layers send back to layer i's output (empty for
    // outputs no add layer reads).
    std::vector<AlignedVector> skip_grads;
    AlignedVector grads;           // this replica's parameter gradients (unused by replica 0)
    std::vector<uint8_t> labels;   // labels of the current shard
    StepStats stats;               // the shard's loss and accuracy
    int64_t first_sample = 0;      // the shard's first sample's place in its batch
    std::vector<int32_t> lengths;  // the shard's sequence lengths (SequencePositions > 0)
  };

  CpuEngine() = default;
  Status BuildReplica(Replica* r, int64_t shard_max, float* grads);
  // Forward (and backward when need_grad) of `shard` on replica r; the loss gradient is scaled by
  // 1/total. With inputs set, the shard's samples are read from there instead of the dataset
  // (and with labels set too, the loss is computed against those). A device part (no classes)
  // stops after the forward. input_grad: where the backward also writes the gradient with
  // respect to the shard's inputs (a server part's gradient at the cut), or null.
  void RunShard(Replica& r, const Dataset* data, std::span<const uint32_t> shard,
                const float* inputs, int64_t count, int64_t total, bool need_grad,
                const uint8_t* labels = nullptr, float* input_grad = nullptr);
  // Backward of replica r's last forward from r.grad_a (the gradient at the last layer's output)
  // down to the part's first computing layer; when input_grad is not null, also that layer's
  // input gradient, copied there (count * spec_.input.numel() floats).
  void BackwardShard(Replica& r, int64_t count, float* input_grad);
  // BackwardFromCut after its checks: the pending batch's backward from `grad` (the gradient at
  // the cut), writing the gradient at the part's input to input_grad unless it is null; then the
  // step.
  void BackwardThroughCut(std::span<const float> grad, const SgdConfig& cfg, float* input_grad);
  // Sums the replicas' gradients (shards > 1) and takes the SGD step.
  void ApplyStep(int shards, const SgdConfig& cfg);
  // The [begin, end) of shard i when n samples are split into `shards`.
  static std::pair<int64_t, int64_t> ShardRange(int64_t n, int shards, int i);
  StepStats Step(const Dataset& data, std::span<const uint32_t> batch, bool need_grad);
  // shard(i) for i in [0, shards): on the calling thread for one, on the pool for more.
  void ForShards(int shards, const std::function<void(int)>& shard);
  // The first `shards` replicas' StepStats, summed in replica order.
  StepStats SumStats(int shards) const;
  // grads_[begin, end) (replica 0's) += each other replica's, in replica order.
  void SumGradients(int shards, int64_t begin, int64_t end);

  ModelSpec spec_;
  int64_t max_batch_ = 0;
  uint64_t fingerprint_ = 0;
  std::vector<Shape3> shapes_;      // output shape of each layer
  std::vector<int64_t> out_sizes_;  // per-sample output size of each layer
  size_t first_layer_ = 0;          // first non-identity layer
  int64_t max_act_ = 0;             // largest per-sample activation
  std::vector<Replica> replicas_;
  std::unique_ptr<ForkJoin> pool_;  // null with one thread
  AlignedVector params_, grads_, velocity_, anchor_;
  std::vector<std::pair<int64_t, int64_t>> trainable_;  // TrainableRanges: what the optimizer steps
  AlignedVector second_moment_;        // Adam's v (sized on its first step); its m is velocity_
  int64_t adam_step_ = 0;              // Adam's t: updates since the state was last reset
  bool keep_optimizer_state_ = false;  // LoadWeights then leaves the optimizer's state
  std::vector<float> correction_;      // empty: none
  int64_t positions_ = 0;              // SequencePositions(spec_): 0 when the model has no lengths
  uint64_t dropout_seed_ = 0;          // SeedDropout's seed
  uint64_t dropout_step_ = 0;          // TrainSteps since SeedDropout: the masks' step
  int64_t cut_batch_ = 0;  // a device part: samples of the last ForwardToCut (0: none pending)
};

}  // namespace tributary::cpu
