#include "aggregation/krum.h"

#include <algorithm>
#include <numeric>

#include "aggregation/pairwise_distances.h"

namespace tributary {

std::vector<double> KrumScores(const std::vector<double>& d, size_t n,
                               const std::vector<size_t>& subset, int64_t f, ThreadPool* pool) {
  const int64_t r = static_cast<int64_t>(subset.size());
  const auto k = static_cast<ptrdiff_t>(std::max<int64_t>(0, r - f - 2));
  std::vector<double> scores(subset.size(), 0.0);
  auto score = [&](size_t a) {
    thread_local std::vector<double> others;
    others.clear();
    for (size_t b = 0; b < subset.size(); ++b)
      if (b != a) others.push_back(d[subset[a] * n + subset[b]]);
    std::nth_element(others.begin(), others.begin() + k, others.end());
    scores[a] = std::accumulate(others.begin(), others.begin() + k, 0.0);
  };
  if (pool != nullptr && subset.size() >= 64) {
    pool->ParallelFor(0, subset.size(), score);
  } else {
    for (size_t a = 0; a < subset.size(); ++a) score(a);
  }
  return scores;
}

int64_t Krum::MinUpdates() const { return std::max<int64_t>(2 * f_ + 3, m_); }

std::string Krum::Requirement() const {
  std::string s =
      "n > 2f + 2 = " + std::to_string(2 * f_ + 2) + " (f = " + std::to_string(f_) + ")";
  if (m_ > 1) s += " and n >= m = " + std::to_string(m_);
  return s;
}

void Krum::Aggregate(std::span<float> out) {
  const UpdateBuffer& buf = buffer();
  const size_t n = buf.size(), dim = buf.dim();
  const std::vector<double> d = PairwiseSquaredDistances(buf, pool());
  std::vector<size_t> all(n);
  std::iota(all.begin(), all.end(), size_t{0});
  const std::vector<double> scores = KrumScores(d, n, all, f_, pool());
  std::stable_sort(all.begin(), all.end(),
                   [&](size_t a, size_t b) { return scores[a] < scores[b]; });
  const size_t m = m_ == 0 ? n - static_cast<size_t>(f_) : static_cast<size_t>(m_);
  selected_.assign(all.begin(), all.begin() + static_cast<ptrdiff_t>(m));
  if (m == 1) {
    std::copy(buf.row(selected_[0]), buf.row(selected_[0]) + dim, out.begin());
    return;
  }
  // Unweighted mean of the selected rows, accumulated in double, in blocks over the pool.
  constexpr size_t kBlock = 4096;
  ParallelFor((dim + kBlock - 1) / kBlock, [&](size_t b) {
    const size_t j0 = b * kBlock, width = std::min(kBlock, dim - j0);
    thread_local std::vector<double> acc;
    acc.assign(width, 0.0);
    for (size_t i : selected_) {
      const float* r = buf.row(i) + j0;
      for (size_t j = 0; j < width; ++j) acc[j] += r[j];
    }
    for (size_t j = 0; j < width; ++j)
      out[j0 + j] = static_cast<float>(acc[j] / static_cast<double>(m));
  });
}

}  // namespace tributary
