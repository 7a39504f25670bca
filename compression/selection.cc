#include "compression/selection.h"

#include <bit>
#include <cstring>

#include "core/rng.h"

namespace tributary {
namespace {

inline uint32_t KeyAt(const float* x, size_t i) {  // |x| as an order-preserving integer
  uint32_t b;
  std::memcpy(&b, x + i, 4);
  return b & 0x7fffffffu;
}

}  // namespace

std::vector<uint32_t> TopKIndices(std::span<const float> x, size_t k) {
  const size_t n = x.size();
  std::vector<uint32_t> out;
  if (k == 0 || n == 0) return out;
  const float* p = x.data();
  // Pass 1: histogram of the high 16 bits. Four interleaved histograms keep runs of equal keys
  // from serializing on one counter.
  std::vector<uint32_t> hist(4 << 16, 0);
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    ++hist[KeyAt(p, i) >> 16];
    ++hist[(1 << 16) + (KeyAt(p, i + 1) >> 16)];
    ++hist[(2 << 16) + (KeyAt(p, i + 2) >> 16)];
    ++hist[(3 << 16) + (KeyAt(p, i + 3) >> 16)];
  }
  for (; i < n; ++i) ++hist[KeyAt(p, i) >> 16];
  for (size_t b = 0; b < (1 << 16); ++b)
    hist[b] += hist[(1 << 16) + b] + hist[(2 << 16) + b] + hist[(3 << 16) + b];
  // The bucket where the count from the top reaches k.
  size_t above = 0;
  uint32_t hi = 0;
  for (int b = (1 << 16) - 1; b >= 0; --b) {
    if (above + hist[b] >= k) {
      hi = static_cast<uint32_t>(b);
      break;
    }
    above += hist[b];
  }
  // Pass 2: histogram of the low 16 bits inside that bucket.
  std::fill(hist.begin(), hist.begin() + (1 << 16), 0u);
  for (i = 0; i < n; ++i) {
    const uint32_t key = KeyAt(p, i);
    if ((key >> 16) == hi) ++hist[key & 0xffff];
  }
  uint32_t lo = 0;
  size_t greater = above;  // keys strictly above the threshold
  for (int b = (1 << 16) - 1; b >= 0; --b) {
    if (greater + hist[b] >= k) {
      lo = static_cast<uint32_t>(b);
      break;
    }
    greater += hist[b];
  }
  const uint32_t threshold = (hi << 16) | lo;
  size_t ties = threshold == 0 ? 0 : k - greater;  // zeros are never sent
  out.reserve(k);
  // Pass 3: the output, in index order.
  for (i = 0; i < n; ++i) {
    const uint32_t key = KeyAt(p, i);
    if (key > threshold) {
      out.push_back(static_cast<uint32_t>(i));
    } else if (key == threshold && ties > 0) {
      out.push_back(static_cast<uint32_t>(i));
      --ties;
    }
  }
  return out;
}

std::vector<uint32_t> RandKIndices(size_t n, size_t k, uint64_t seed) {
  std::vector<uint32_t> out;
  if (k == 0 || n == 0) return out;
  if (k > n) k = n;
  Rng rng(seed);
  std::vector<uint64_t> chosen((n + 63) / 64, 0);
  auto test_and_set = [&](uint64_t j) {
    const uint64_t bit = uint64_t{1} << (j & 63);
    const bool was = chosen[j >> 6] & bit;
    chosen[j >> 6] |= bit;
    return was;
  };
  // Floyd: for j in [n - k, n), pick t uniform in [0, j]; take t, or j when t is taken.
  for (uint64_t j = n - k; j < n; ++j) {
    if (test_and_set(rng.UniformInt(j + 1))) test_and_set(j);
  }
  out.reserve(k);
  for (size_t w = 0; w < chosen.size(); ++w) {
    uint64_t bits = chosen[w];
    while (bits) {
      out.push_back(static_cast<uint32_t>(w * 64 + std::countr_zero(bits)));
      bits &= bits - 1;
    }
  }
  return out;
}

}  // namespace tributary
