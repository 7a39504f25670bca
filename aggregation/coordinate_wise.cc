#include "aggregation/coordinate_wise.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace tributary {
namespace {

// Coordinates per transposed block: with n = 1000 updates a block is 256 KB of scratch.
constexpr size_t kBlock = 64;

float MedianOf(float* v, size_t n) {
  const size_t mid = n / 2;
  std::nth_element(v, v + mid, v + n);
  if (n % 2 == 1) return v[mid];
  // After nth_element everything before mid is <= v[mid]; the other middle value is their max.
  const float lower = *std::max_element(v, v + mid);
  return static_cast<float>((static_cast<double>(lower) + v[mid]) / 2.0);
}

float TrimmedMeanOf(float* v, size_t n, size_t k) {
  if (k > 0) {
    std::nth_element(v, v + k, v + n);            // v[0, k) are the k smallest
    std::nth_element(v + k, v + (n - k), v + n);  // v[n - k, n) are the k largest
  }
  double sum = 0.0;
  for (size_t i = k; i < n - k; ++i) sum += v[i];
  return static_cast<float>(sum / static_cast<double>(n - 2 * k));
}

}  // namespace

std::unique_ptr<CoordinateWise> CoordinateWise::Median(const RobustOptions& options) {
  return std::unique_ptr<CoordinateWise>(new CoordinateWise("median", -1.0, options));
}

std::unique_ptr<CoordinateWise> CoordinateWise::TrimmedMean(double beta,
                                                            const RobustOptions& options) {
  return std::unique_ptr<CoordinateWise>(new CoordinateWise("trimmed_mean", beta, options));
}

int64_t CoordinateWise::TrimCount(int64_t n) const {
  if (beta_ < 0.0) return 0;
  // The epsilon keeps a product that should be an integer (0.3 * 10) from flooring one too low.
  return static_cast<int64_t>(std::floor(beta_ * static_cast<double>(n) + 1e-9));
}

void CoordinateWise::Aggregate(std::span<float> out) {
  const UpdateBuffer& buf = buffer();
  const size_t n = buf.size(), dim = buf.dim();
  const size_t k = static_cast<size_t>(TrimCount(static_cast<int64_t>(n)));
  const bool median = beta_ < 0.0;
  const size_t blocks = (dim + kBlock - 1) / kBlock;
  ParallelFor(blocks, [&](size_t b) {
    thread_local std::vector<float> cols;
    const size_t j0 = b * kBlock, width = std::min(kBlock, dim - j0);
    cols.resize(n * width);
    // Transpose: each row contributes `width` contiguous floats; column j is cols[j*n, j*n + n).
    for (size_t i = 0; i < n; ++i) {
      const float* r = buf.row(i) + j0;
      for (size_t j = 0; j < width; ++j) cols[j * n + i] = r[j];
    }
    for (size_t j = 0; j < width; ++j) {
      float* c = cols.data() + j * n;
      out[j0 + j] = median ? MedianOf(c, n) : TrimmedMeanOf(c, n, k);
    }
  });
}

}  // namespace tributary
