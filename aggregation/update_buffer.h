// UpdateBuffer: dense storage of every update of a round, for the rules that need them all
// (median, trimmed mean, Krum, Multi-Krum, Bulyan).
//
// Updates are stored unweighted as rows of `dim` floats, in chunks of up to kChunkBytes (several
// rows per chunk, contiguous, so pairwise dot products run as matrix products). The total is bound
// by `max_bytes`: Append fails with ResourceExhausted, before allocating, when one more row would
// exceed it. Memory is kept across rounds (Reset) and released on destruction or when the
// dimension changes.
//
// Not thread-safe for mutation; const access may be shared by threads.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tributary/result.h"

namespace tributary {

class UpdateBuffer {
 public:
  static constexpr size_t kChunkBytes = size_t{16} << 20;

  // `owner` names the strategy in error messages.
  UpdateBuffer(std::string owner, size_t max_bytes) : owner_(std::move(owner)), max_(max_bytes) {}

  // Empties the buffer for rows of `dim` floats.
  void Reset(size_t dim);
  // A new zero-filled row. ResourceExhausted when it would take the buffer past max_bytes.
  Result<std::span<float>> Append();
  // Drops the last row (an update that failed validation after it was written).
  void PopBack();

  size_t size() const { return rows_; }
  size_t dim() const { return dim_; }
  size_t max_bytes() const { return max_; }
  const float* row(size_t i) const {
    return chunks_[i / per_chunk_].get() + (i % per_chunk_) * dim_;
  }

  // Rows [first, first + count) of one chunk are contiguous at `data`.
  struct Block {
    const float* data;
    size_t first;
    size_t count;
  };
  std::vector<Block> Blocks() const;

 private:
  std::string owner_;
  size_t max_;
  size_t dim_ = 0;
  size_t per_chunk_ = 1;  // rows per chunk
  size_t rows_ = 0;
  std::vector<std::unique_ptr<float[]>> chunks_;
};

}  // namespace tributary
