// Bulyan (El Mhamdi et al. 2018, "The Hidden Vulnerability of Distributed Learning in
// Byzantium"), with at most f Byzantine updates among n >= 4f + 3:
//   1. Selection: theta = n - 2f updates, chosen one at a time by Krum over the updates not yet
//      chosen (each Krum score over max(r - f - 2, 0) nearest neighbours, r = updates left).
//   2. Aggregation, per coordinate: of the theta selected values, the beta = theta - 2f closest to
//      their median (the mean of the two middle values when theta is even) are averaged.
// In every coordinate the result lies within the range of the honest updates.
//
// Needs every update: see RobustRule for the memory bound. Costs the Gram matrix (see
// PairwiseSquaredDistances), O(n^3) for the selection on the n x n distances, and a sort of theta
// values per coordinate.
#pragma once

#include <vector>

#include "aggregation/robust_rule.h"

namespace tributary {

class Bulyan final : public RobustRule {
 public:
  // f >= 0 is validated by MakeStrategy.
  Bulyan(int64_t f, const RobustOptions& options) : RobustRule("bulyan", options), f_(f) {}

  // The indices (arrival order, in selection order) the last Finalize selected.
  const std::vector<size_t>& selected() const { return selected_; }

 protected:
  int64_t MinUpdates() const override { return 4 * f_ + 3; }
  std::string Requirement() const override;
  void Aggregate(std::span<float> out) override;

 private:
  int64_t f_;
  std::vector<size_t> selected_;
};

}  // namespace tributary
