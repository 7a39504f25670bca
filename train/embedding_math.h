// An embedding's arithmetic (a table of `vocab` vectors of `dim` values, looked up by token id:
// PyTorch's nn.Embedding), one definition for the CPU engine (train/cpu/embedding.cc) and the CUDA
// kernels (train/cuda/embedding.cu), so both backends give the same bits.
//
// The input holds token ids as float32 values (exact for every integer up to 2^24); a value that is
// not an integer in [0, vocab) looks up nothing: its output vector is zero and it adds to no
// gradient (engines' callers refuse such inputs first: CheckTokenIds in train/token_ids.h). The
// weight gradient of a batch is each position's output gradient added to its token's row, in
// position order (samples in order, a sample's positions in order).
#pragma once

#include <cstdint>

#if defined(__CUDACC__) || defined(TRIB_CUDA_HOST_EMULATION)
#define TRIB_EMB_HD __host__ __device__
#else
#define TRIB_EMB_HD
#endif

namespace tributary {

// The table row of token value `x`, or -1 when `x` is not an integer in [0, vocab) (NaN included).
TRIB_EMB_HD inline int64_t TokenRow(float x, int64_t vocab) {
  if (!(x >= 0.0f) || !(x < static_cast<float>(vocab))) return -1;
  const int64_t row = static_cast<int64_t>(x);
  return static_cast<float>(row) == x ? row : -1;
}

// A sample's length when `pad` marks padding (Embedding's `pad`): the positions before its first
// pad token (all `positions` when it has none). Recurrent layers stop at it (train/cpu/lstm.h).
TRIB_EMB_HD inline int32_t SequenceLength(const float* ids, int64_t positions, float pad) {
  for (int64_t p = 0; p < positions; ++p)
    if (ids[p] == pad) return static_cast<int32_t>(p);
  return static_cast<int32_t>(positions);
}

}  // namespace tributary
