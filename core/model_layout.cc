#include "core/model_layout.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/hash.h"

namespace tributary {
namespace {

bool SameTensorsInAnyOrder(std::span<const TensorLayout> a, std::span<const TensorLayout> b) {
  if (a.size() != b.size()) return false;
  auto less = [](const TensorLayout* x, const TensorLayout* y) { return x->name < y->name; };
  std::vector<const TensorLayout*> pa, pb;
  for (const TensorLayout& t : a) pa.push_back(&t);
  for (const TensorLayout& t : b) pb.push_back(&t);
  std::sort(pa.begin(), pa.end(), less);
  std::sort(pb.begin(), pb.end(), less);
  for (size_t i = 0; i < pa.size(); ++i)
    if (*pa[i] != *pb[i]) return false;
  return true;
}

}  // namespace

ModelLayout LayoutOf(const ModelWeights& weights) {
  ModelLayout out;
  out.reserve(weights.num_tensors());
  for (const TensorInfo& t : weights.tensors())
    out.push_back(TensorLayout{t.name, std::string(kDtypeF32), t.shape});
  return out;
}

uint64_t LayoutFingerprint(std::span<const TensorLayout> layout) {
  if (layout.empty()) return 0;  // as ModelWeights() has
  Fnv1a64 fp;
  for (const TensorLayout& t : layout) {
    fp.Add(t.name.data(), t.name.size() + 1);  // with the terminator, as ModelWeights::Create
    const uint64_t ndim = t.shape.size();
    fp.Add(&ndim, sizeof(ndim));
    fp.Add(t.shape.data(), t.shape.size() * sizeof(int64_t));
    if (t.dtype != kDtypeF32) fp.Add(t.dtype.data(), t.dtype.size() + 1);
  }
  return fp.value();
}

std::string DescribeTensor(const TensorLayout& t) {
  return fmt::format("'{}' [{}] {}", t.name, fmt::join(t.shape, ", "), t.dtype);
}

std::string LayoutDifference(std::span<const TensorLayout> a, std::string_view a_label,
                             std::span<const TensorLayout> b, std::string_view b_label) {
  for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    if (i >= a.size())
      return fmt::format("{} has {} tensors; {} has more, starting with tensor {} {}", a_label,
                         a.size(), b_label, i, DescribeTensor(b[i]));
    if (i >= b.size())
      return fmt::format("{} has {} tensors; {} has more, starting with tensor {} {}", b_label,
                         b.size(), a_label, i, DescribeTensor(a[i]));
    if (a[i] != b[i]) {
      std::string diff = fmt::format("tensor {} is {} in {} and {} in {}", i, DescribeTensor(a[i]),
                                     a_label, DescribeTensor(b[i]), b_label);
      if (SameTensorsInAnyOrder(a, b))
        diff += " (the same tensors in another order: the order is part of the layout)";
      return diff;
    }
  }
  return "";
}

}  // namespace tributary
