// Krum and Multi-Krum (Blanchard et al. 2017, "Machine Learning with Adversaries: Byzantine
// Tolerant Gradient Descent").
//
// With n updates of which at most f are Byzantine, each update i gets the score
//   s(i) = sum of the squared distances from i to its n - f - 2 nearest other updates.
// Krum returns the update with the lowest score (so the result is exactly one of the inputs);
// Multi-Krum returns the unweighted mean of the m updates with the lowest scores (m = 0 means
// n - f). Ties go to the update that arrived first. Requires n > 2f + 2 (and n >= m).
//
// Needs every update: see RobustRule for the memory bound. Distances come from the Gram matrix
// (PairwiseSquaredDistances): O(n^2 d) flops in an Eigen rank-k update, O(n^2) extra memory.
#pragma once

#include <vector>

#include "aggregation/robust_rule.h"

namespace tributary {

// The Krum scores of the updates in `subset` (indices into an n x n squared-distance matrix `d`),
// each over its max(|subset| - f - 2, 0) nearest neighbours within the subset. Spread over `pool`
// (may be null).
std::vector<double> KrumScores(const std::vector<double>& d, size_t n,
                               const std::vector<size_t>& subset, int64_t f, ThreadPool* pool);

class Krum final : public RobustRule {
 public:
  // m == 1: Krum; m > 1: Multi-Krum; m == 0: Multi-Krum with m = n - f. f >= 0, m >= 0 are
  // validated by MakeStrategy.
  Krum(int64_t f, int64_t m, const RobustOptions& options)
      : RobustRule(m == 1 ? "krum" : "multikrum", options), f_(f), m_(m) {}

  // The indices (arrival order) the last Finalize selected.
  const std::vector<size_t>& selected() const { return selected_; }

 protected:
  int64_t MinUpdates() const override;
  std::string Requirement() const override;
  void Aggregate(std::span<float> out) override;

 private:
  int64_t f_, m_;
  std::vector<size_t> selected_;
};

}  // namespace tributary
