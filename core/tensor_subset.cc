#include "core/tensor_subset.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/check.h"
#include "core/model_layout.h"

namespace tributary {

Result<TensorSubset> TensorSubset::Create(const ModelWeights& layout,
                                          std::vector<uint32_t> indices) {
  if (indices.empty()) return Status::InvalidArgument("a tensor subset needs at least one tensor");
  const size_t n = layout.num_tensors();
  for (size_t k = 0; k < indices.size(); ++k) {
    if (indices[k] >= n)
      return Status::InvalidArgument(fmt::format(
          "tensor index {} (entry {}) is past the model's {} tensors", indices[k], k, n));
    if (k > 0 && indices[k] <= indices[k - 1])
      return Status::InvalidArgument(
          fmt::format("tensor indices must be strictly increasing: entry {} is {} after {}", k,
                      indices[k], indices[k - 1]));
  }
  TensorSubset s;
  s.chosen_.assign(n, false);
  for (uint32_t i : indices) s.chosen_[i] = true;
  s.indices_ = std::move(indices);
  for (size_t t = 0; t < n; ++t) {
    const TensorInfo& info = layout.tensors()[t];
    s.whole_.emplace_back(info.name, info.shape);
    (s.chosen_[t] ? s.selected_ : s.rest_).emplace_back(info.name, info.shape);
    if (s.chosen_[t]) s.selected_floats_ += info.numel;
  }
  s.whole_fingerprint_ = layout.fingerprint();
  s.whole_floats_ = layout.size();
  return s;
}

ModelWeights TensorSubset::SelectedLayout() const {
  Result<ModelWeights> w = ModelWeights::Create(selected_);
  TRIB_CHECK(w.ok(), "a tensor subset's layout is one of a valid model's");
  return std::move(*w);
}

ModelWeights TensorSubset::RestLayout() const {
  Result<ModelWeights> w = ModelWeights::Create(rest_);
  TRIB_CHECK(w.ok(), "a tensor subset's rest is one of a valid model's");
  return std::move(*w);
}

Status TensorSubset::CheckWhole(const ModelWeights& whole) const {
  if (whole.fingerprint() == whole_fingerprint_ && whole.size() == whole_floats_)
    return Status::Ok();
  Result<ModelWeights> want = ModelWeights::Create(whole_);
  TRIB_CHECK(want.ok(), "a tensor subset's whole layout is valid");
  return Status::InvalidArgument(
      "the model does not have the layout its tensor subset was made for: " +
      LayoutDifference(LayoutOf(whole), "the model", LayoutOf(*want), "the subset's"));
}

void TensorSubset::Copy(const ModelWeights& from, ModelWeights& to, bool selected,
                        bool to_part) const {
  size_t part = 0;
  for (size_t t = 0; t < chosen_.size(); ++t) {
    if (chosen_[t] != selected) continue;
    std::span<const float> src = to_part ? from.tensor(t) : from.tensor(part);
    std::span<float> dst = to_part ? to.tensor(part) : to.tensor(t);
    std::copy(src.begin(), src.end(), dst.begin());
    ++part;
  }
}

Result<ModelWeights> TensorSubset::Selected(const ModelWeights& whole) const {
  TRIB_RETURN_IF_ERROR(CheckWhole(whole));
  ModelWeights out = SelectedLayout();
  Copy(whole, out, true, true);
  return out;
}

Result<ModelWeights> TensorSubset::Rest(const ModelWeights& whole) const {
  TRIB_RETURN_IF_ERROR(CheckWhole(whole));
  ModelWeights out = RestLayout();
  Copy(whole, out, false, true);
  return out;
}

Result<ModelWeights> TensorSubset::Join(const ModelWeights& selected,
                                        const ModelWeights& rest) const {
  ModelWeights sel_layout = SelectedLayout(), rest_layout = RestLayout();
  if (!selected.same_layout(sel_layout))
    return Status::InvalidArgument(
        "the federated tensors do not have the subset's layout: " +
        LayoutDifference(LayoutOf(selected), "given", LayoutOf(sel_layout), "expected"));
  if (!rest.same_layout(rest_layout))
    return Status::InvalidArgument(
        "the frozen tensors do not have the subset's layout: " +
        LayoutDifference(LayoutOf(rest), "given", LayoutOf(rest_layout), "expected"));
  Result<ModelWeights> whole = ModelWeights::Create(whole_);
  TRIB_CHECK(whole.ok(), "a tensor subset's whole layout is valid");
  Copy(selected, *whole, true, false);
  Copy(rest, *whole, false, false);
  return whole;
}

}  // namespace tributary
