#include "aggregation/bulyan.h"

#include <algorithm>
#include <numeric>

#include "aggregation/krum.h"
#include "aggregation/pairwise_distances.h"

namespace tributary {
namespace {

constexpr size_t kColumnBlock = 64;  // coordinates per transposed block

// The mean of the `beta` values of sorted v[0, n) closest to their median. They form a
// contiguous window around the median, grown one value at a time toward the closer side.
double MeanAroundMedian(float* v, size_t n, size_t beta) {
  std::sort(v, v + n);
  const double med = n % 2 == 1 ? v[n / 2] : (static_cast<double>(v[n / 2 - 1]) + v[n / 2]) / 2.0;
  size_t lo = n / 2, hi = n / 2;  // window [lo, hi)
  double sum = 0.0;
  while (hi - lo < beta) {
    const bool take_left =
        hi == n || (lo > 0 && med - static_cast<double>(v[lo - 1]) <= v[hi] - med);
    sum += take_left ? v[--lo] : v[hi++];
  }
  return sum / static_cast<double>(beta);
}

}  // namespace

std::string Bulyan::Requirement() const {
  return "n >= 4f + 3 = " + std::to_string(4 * f_ + 3) + " (f = " + std::to_string(f_) + ")";
}

void Bulyan::Aggregate(std::span<float> out) {
  const UpdateBuffer& buf = buffer();
  const size_t n = buf.size(), dim = buf.dim();
  const size_t f = static_cast<size_t>(f_);
  const size_t theta = n - 2 * f, beta = theta - 2 * f;
  const std::vector<double> d = PairwiseSquaredDistances(buf, pool());

  std::vector<size_t> left(n);
  std::iota(left.begin(), left.end(), size_t{0});
  selected_.clear();
  while (selected_.size() < theta) {
    const std::vector<double> scores = KrumScores(d, n, left, f_, pool());
    const size_t best = static_cast<size_t>(std::min_element(scores.begin(), scores.end()) -
                                            scores.begin());  // first on ties
    selected_.push_back(left[best]);
    left.erase(left.begin() + static_cast<ptrdiff_t>(best));
  }

  ParallelFor((dim + kColumnBlock - 1) / kColumnBlock, [&](size_t b) {
    thread_local std::vector<float> cols;
    const size_t j0 = b * kColumnBlock, width = std::min(kColumnBlock, dim - j0);
    cols.resize(theta * width);
    for (size_t s = 0; s < theta; ++s) {
      const float* r = buf.row(selected_[s]) + j0;
      for (size_t j = 0; j < width; ++j) cols[j * theta + s] = r[j];
    }
    for (size_t j = 0; j < width; ++j)
      out[j0 + j] = static_cast<float>(MeanAroundMedian(cols.data() + j * theta, theta, beta));
  });
}

}  // namespace tributary
