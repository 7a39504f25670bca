// Dropout's mask, one definition for the CPU engine (train/cpu/pointwise.cc) and the CUDA kernel
// (train/cuda/dropout.cu), so both engines drop the same elements.
//
// In a training step, element e of sample s (its position in the step's batch, counted over the
// whole batch, not a thread's shard) of a dropout layer is kept iff DropoutBits(key, s, e) >=
// DropoutThreshold(rate), and a kept element is scaled by DropoutScale(rate) = 1 / (1 - rate):
// torch.nn.Dropout's semantics (out = x * mask / (1 - p); the backward is the same product with
// the output's gradient). The key is DropoutKey(seed, step, layer): the engine's dropout seed
// (Engine::SeedDropout, set per fit from the fit's seed), the training step's count since then and
// the layer's index. So masks depend only on the seed, the step, the layer and the sample's place
// in the batch: the same for every thread count and on both engines, and a resumed run draws the
// masks it would have drawn. The bits come from a counter-based hash (MurmurHash3's 64-bit
// finalizer, twice), not from a stream, so no state is kept and any element is drawn in O(1).
// Evaluation and prediction do not drop (the layer is the identity there).
#pragma once

#include <cstdint>

#if defined(__CUDACC__) || defined(TRIB_CUDA_HOST_EMULATION)
#define TRIB_DROPOUT_HD __host__ __device__
#else
#define TRIB_DROPOUT_HD
#endif

namespace tributary {

TRIB_DROPOUT_HD inline uint64_t DropoutMix(uint64_t z) {
  z ^= z >> 33;
  z *= 0xff51afd7ed558ccdull;
  z ^= z >> 33;
  z *= 0xc4ceb9fe1a85ec53ull;
  z ^= z >> 33;
  return z;
}

// The key of one dropout layer (its index in the model) in one training step.
TRIB_DROPOUT_HD inline uint64_t DropoutKey(uint64_t seed, uint64_t step, uint64_t layer) {
  return DropoutMix(seed ^ DropoutMix((step << 16) ^ layer ^ 0x9e3779b97f4a7c15ull));
}

// 32 uniform bits for element `element` (< 2^32) of sample `sample` (< 2^32).
TRIB_DROPOUT_HD inline uint32_t DropoutBits(uint64_t key, uint64_t sample, uint64_t element) {
  return static_cast<uint32_t>(DropoutMix(key ^ DropoutMix((sample << 32) | element)) >> 32);
}

// Bits below this are dropped: round(rate * 2^32), so P(drop) = rate within 2^-32.
TRIB_DROPOUT_HD inline uint32_t DropoutThreshold(float rate) {
  const double t = static_cast<double>(rate) * 4294967296.0 + 0.5;
  return t >= 4294967295.0 ? 4294967295u : static_cast<uint32_t>(t);
}

// In float, as PyTorch's noise.div_(1 - p) on a float tensor computes it.
TRIB_DROPOUT_HD inline float DropoutScale(float rate) { return 1.0f / (1.0f - rate); }

}  // namespace tributary
