// TensorSubset: some of a model's tensors, chosen by index, and the rest.
//
// A run that federates only a model's unfrozen tensors (run.federate = "unfrozen", docs/models.md)
// aggregates and sends a model made of those tensors alone; the frozen rest stays on the
// coordinator and on each client. This class cuts a whole model into the two parts and joins them
// again, bit for bit: Selected(w) holds the chosen tensors in index order, with their names and
// shapes, Rest(w) the others in index order, and Join(Selected(w), Rest(w)) == w.
//
// Immutable after Create; thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "tributary/model_weights.h"
#include "tributary/status.h"

namespace tributary {

class TensorSubset {
 public:
  // `indices` into `layout`'s tensors: strictly increasing, each below layout.num_tensors(), at
  // least one. InvalidArgument naming the first bad index otherwise.
  static Result<TensorSubset> Create(const ModelWeights& layout, std::vector<uint32_t> indices);

  const std::vector<uint32_t>& indices() const { return indices_; }
  // The whole model's layout fingerprint (what a part is cut from and joined into).
  uint64_t whole_fingerprint() const { return whole_fingerprint_; }
  size_t selected_floats() const { return selected_floats_; }
  size_t rest_floats() const { return whole_floats_ - selected_floats_; }

  // Zeros in the layout of the chosen tensors / of the others.
  ModelWeights SelectedLayout() const;
  ModelWeights RestLayout() const;

  // The chosen tensors / the others of `whole`; InvalidArgument naming the first differing tensor
  // when `whole` does not have the layout this subset was made for.
  Result<ModelWeights> Selected(const ModelWeights& whole) const;
  Result<ModelWeights> Rest(const ModelWeights& whole) const;
  // The whole model from its two parts; InvalidArgument when either part has another layout.
  Result<ModelWeights> Join(const ModelWeights& selected, const ModelWeights& rest) const;

 private:
  TensorSubset() = default;
  Status CheckWhole(const ModelWeights& whole) const;
  // Copies tensors of `from` (a whole model when `to_part`, else a part) into `to`.
  void Copy(const ModelWeights& from, ModelWeights& to, bool selected, bool to_part) const;

  std::vector<uint32_t> indices_;
  std::vector<bool> chosen_;  // per tensor of the whole model
  ModelWeights::LayoutSpec whole_, selected_, rest_;
  uint64_t whole_fingerprint_ = 0;
  size_t whole_floats_ = 0, selected_floats_ = 0;
};

}  // namespace tributary
