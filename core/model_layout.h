// ModelLayout: a model's tensor list (names, dtypes, shapes, order) as a value, for agreeing on a
// layout before any weights move.
//
// A client declares its layout when it connects (protocol Hello), the coordinator compares it with
// the run's, and checkpoints are compared with the run they resume. Every comparison reports the
// first tensor that differs, on both sides, in one line a user can act on:
//   "tensor 1 is 'fc.weight' [10, 784] F32 in the run's model and 'fc.w' [10, 784] F32 in the
//    client's"
// LayoutFingerprint() of LayoutOf(w) equals w.fingerprint(): the cheap check first, the list for
// the message.
//
// Every tensor is float32 ("F32") today: ModelWeights holds floats. The dtype travels anyway so a
// peer with another dtype is named, not misread.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tributary/model_weights.h"

namespace tributary {

inline constexpr std::string_view kDtypeF32 = "F32";

struct TensorLayout {
  std::string name;
  std::string dtype{kDtypeF32};
  std::vector<int64_t> shape;

  friend bool operator==(const TensorLayout&, const TensorLayout&) = default;
};

using ModelLayout = std::vector<TensorLayout>;

ModelLayout LayoutOf(const ModelWeights& weights);

// The hash ModelWeights::fingerprint() computes (names, shapes, order), over a declared list. Any
// dtype other than F32 is mixed in, so such a list never matches a float model's fingerprint.
uint64_t LayoutFingerprint(std::span<const TensorLayout> layout);

// "name [d0, d1] DTYPE".
std::string DescribeTensor(const TensorLayout& t);

// The first difference between two layouts, naming the tensor (index, name, shape, dtype) on both
// sides with the labels given ("the run's model", "the client's"); "" when they are equal.
std::string LayoutDifference(std::span<const TensorLayout> a, std::string_view a_label,
                             std::span<const TensorLayout> b, std::string_view b_label);

}  // namespace tributary
