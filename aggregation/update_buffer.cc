#include "aggregation/update_buffer.h"

#include <algorithm>

namespace tributary {

void UpdateBuffer::Reset(size_t dim) {
  if (dim != dim_) {
    chunks_.clear();
    dim_ = dim;
    per_chunk_ = std::max<size_t>(1, kChunkBytes / std::max<size_t>(1, dim * sizeof(float)));
  }
  rows_ = 0;
}

Result<std::span<float>> UpdateBuffer::Append() {
  const size_t row_bytes = dim_ * sizeof(float);
  const size_t max_rows = row_bytes == 0 ? SIZE_MAX : max_ / row_bytes;
  if (rows_ + 1 > max_rows)
    return Status::ResourceExhausted(owner_ + ": storing update " + std::to_string(rows_ + 1) +
                                     " would take the dense update " + "buffer past its bound of " +
                                     std::to_string(max_) + " bytes (" + std::to_string(max_rows) +
                                     " updates of " + std::to_string(dim_) +
                                     " floats); raise max_buffer_mb or lower clients_per_round");
  const size_t c = rows_ / per_chunk_, r = rows_ % per_chunk_;
  if (c == chunks_.size()) {
    // Never allocate rows the bound would not let us fill.
    const size_t rows = std::min(per_chunk_, max_rows - rows_);
    chunks_.push_back(std::make_unique_for_overwrite<float[]>(rows * dim_));
  }
  float* p = chunks_[c].get() + r * dim_;
  std::fill(p, p + dim_, 0.0f);
  ++rows_;
  return std::span<float>(p, dim_);
}

void UpdateBuffer::PopBack() {
  if (rows_ > 0) --rows_;
}

std::vector<UpdateBuffer::Block> UpdateBuffer::Blocks() const {
  std::vector<Block> out;
  for (size_t first = 0; first < rows_; first += per_chunk_)
    out.push_back({chunks_[first / per_chunk_].get(), first, std::min(per_chunk_, rows_ - first)});
  return out;
}

}  // namespace tributary
