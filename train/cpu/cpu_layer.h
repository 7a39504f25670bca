// CpuLayer: one layer of the Eigen reference backend.
//
// A layer transforms a batch of n samples. Activations are float buffers of n * per-sample size,
// in NHWC order. Parameters and their gradients live in the engine's flat buffers; Bind() hands the
// layer pointers to its slice (weight then bias, as laid out by ParameterLayout()).
//
// Backward() overwrites the parameter gradients (it does not accumulate) and, when grad_in is not
// null, writes the gradient with respect to the input. A layer may keep per-batch scratch state
// between Forward() and Backward() (im2col columns, pooling argmax); Forward() must be called with
// the same batch before Backward(). Not thread-safe.
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <vector>

namespace tributary::cpu {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MatrixMap = Eigen::Map<RowMatrix>;
using ConstMatrixMap = Eigen::Map<const RowMatrix>;
// Every buffer a GEMM touches is allocated with Eigen's maximum alignment: Eigen's kernels take
// different (equally correct) summation paths for different alignments, so mixed alignment would
// make results depend on where malloc happened to put a buffer, breaking bitwise determinism.
using AlignedVector = std::vector<float, Eigen::aligned_allocator<float>>;

class CpuLayer {
 public:
  virtual ~CpuLayer() = default;
  virtual int64_t num_params() const { return 0; }
  virtual void Bind(float* /*params*/, float* /*grads*/) {}
  // True for layers whose output is their input, byte for byte (Flatten): the engine aliases them.
  virtual bool is_identity() const { return false; }
  // Before each batch's Forward: whether it is a training step, the layer's dropout key for this
  // step (train/dropout_math.h), the place of the shard's first sample in the whole batch, and
  // each of the shard's samples' sequence length (ModelSpec's SequencePositions; null when the
  // model has none). Dropout and the recurrent layers use it; the pointers stay valid until the
  // batch's Backward.
  virtual void BeginBatch(bool training, uint64_t key, int64_t first_sample,
                          const int32_t* lengths) {
    (void)training;
    (void)key;
    (void)first_sample;
    (void)lengths;
  }
  virtual void Forward(const float* in, float* out, int64_t n) = 0;
  virtual void Backward(const float* in, const float* out, const float* grad_out, float* grad_in,
                        int64_t n) = 0;
};

}  // namespace tributary::cpu
