#include "privacy/secagg/neighbour_graph.h"

#include <algorithm>
#include <bit>
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

size_t NeighbourGraph::DefaultDegree(size_t n) {
  if (n <= 1) return 0;
  const size_t log2n = static_cast<size_t>(std::bit_width(n - 1));  // ceil(log2 n)
  size_t k = 2 * log2n;
  return std::min(k, n - 1);
}

}  // namespace tributary
