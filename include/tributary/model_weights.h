// ModelWeights: a model's parameters as named tensors laid out in one contiguous float buffer.
//
// Compression, aggregation, checkpoints and the wire all operate on data() as a flat span, so each
// is a tight loop over memory. The layout (names, shapes, order) is shared between copies and
// summarized by fingerprint(): two ModelWeights with different fingerprints must never be averaged.
//
// Thread safety: const methods may be called concurrently; mutation needs external synchronization.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tributary/result.h"

namespace tributary {

struct TensorInfo {
  std::string name;
  std::vector<int64_t> shape;
  size_t offset = 0;  // in floats, from the start of the flat buffer
  size_t numel = 0;
};

class ModelWeights {
 public:
  using LayoutSpec = std::vector<std::pair<std::string, std::vector<int64_t>>>;

  // An empty model (no tensors).
  ModelWeights();

  // Builds a zero-filled model whose tensors are laid out in the given order. Fails when a name is
  // empty or repeated, a dimension is negative, or the total exceeds max_floats.
  static Result<ModelWeights> Create(const LayoutSpec& layout, size_t max_floats = size_t{1} << 34);

  // A zero-filled model with the same layout as this one.
  ModelWeights ZerosLike() const;

  const std::vector<TensorInfo>& tensors() const;
  size_t num_tensors() const { return tensors().size(); }
  // Total number of floats.
  size_t size() const { return data_.size(); }
  size_t size_bytes() const { return data_.size() * sizeof(float); }

  std::span<float> data() { return data_; }
  std::span<const float> data() const { return data_; }
  std::span<float> tensor(size_t index);
  std::span<const float> tensor(size_t index) const;
  // Null when there is no tensor with that name.
  const TensorInfo* find(std::string_view name) const;

  // 64-bit FNV-1a hash of the layout (names, shapes, order); equal layouts give equal fingerprints.
  uint64_t fingerprint() const;
  // 64-bit FNV-1a hash of the layout and the bytes of the data. Used to compare models exactly.
  uint64_t content_hash() const;
  bool same_layout(const ModelWeights& other) const;

  // Equal layout and bitwise-equal data.
  friend bool operator==(const ModelWeights& a, const ModelWeights& b);

 private:
  struct Layout {
    std::vector<TensorInfo> tensors;
    uint64_t fingerprint = 0;
  };
  std::shared_ptr<const Layout> layout_;
  std::vector<float> data_;
};

}  // namespace tributary
