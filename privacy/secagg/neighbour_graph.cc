#include "privacy/secagg/neighbour_graph.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <numeric>

#include "crypto/chacha20_stream.h"

namespace tributary {

NeighbourGraph::NeighbourGraph(size_t n, size_t k, const Key32& seed) : neighbours_(n) {
  if (n < 2) return;
  if (k >= n - 1) {
    for (size_t i = 0; i < n; ++i)
      for (size_t j = 0; j < n; ++j)
        if (j != i) neighbours_[i].push_back(static_cast<uint32_t>(j));
    return;
  }
  // Fisher-Yates over the roster indices, driven by the seed's ChaCha20 stream.
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  ChaCha20Stream prg(seed);
  for (size_t i = n - 1; i > 0; --i) {
    uint64_t r;
    prg.Fill(std::span(reinterpret_cast<uint8_t*>(&r), sizeof r));
    std::swap(order[i], order[r % (i + 1)]);  // bias below 2^-40 for any n < 2^24
  }
  const size_t half = (k + 1) / 2;
  for (size_t p = 0; p < n; ++p) {
    std::vector<uint32_t>& mine = neighbours_[order[p]];
    for (size_t d = 1; d <= half; ++d) {
      mine.push_back(order[(p + d) % n]);
      mine.push_back(order[(p + n - d) % n]);
    }
    std::sort(mine.begin(), mine.end());
    mine.erase(std::unique(mine.begin(), mine.end()), mine.end());
  }
}

bool NeighbourGraph::Joined(size_t a, size_t b) const {
  return std::binary_search(neighbours_[a].begin(), neighbours_[a].end(), static_cast<uint32_t>(b));
}

double NeighbourGraph::BinomialBelow(size_t k, double p, size_t m) {
  if (p <= 0.0) return m > 0 ? 1.0 : 0.0;
  if (p >= 1.0) return m > k ? 1.0 : 0.0;
  double sum = 0.0;
  const double lp = std::log(p), lq = std::log1p(-p);
  for (size_t j = 0; j < m && j <= k; ++j) {
    const double kd = static_cast<double>(k), jd = static_cast<double>(j);
    sum += std::exp(std::lgamma(kd + 1) - std::lgamma(jd + 1) - std::lgamma(kd - jd + 1) + jd * lp +
                    (kd - jd) * lq);
  }
  return std::min(sum, 1.0);
}

size_t NeighbourGraph::DefaultDegree(size_t n, double max_dropout, double round_failure) {
  if (n <= 1) return 0;
  const size_t log2n = static_cast<size_t>(std::bit_width(n - 1));  // ceil(log2 n)
  for (size_t k = 2 * log2n; k < n - 1; k += 2) {
    const double per_client = BinomialBelow(k, 1.0 - max_dropout, DefaultThreshold(k));
    if (static_cast<double>(n) * per_client <= round_failure) return k;
  }
  return n - 1;
}

}  // namespace tributary
