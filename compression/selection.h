// Choosing which values a sparse pipeline sends.
//
// TopKIndices: the indices of the k largest |x[i]| in increasing order; ties at the threshold go to
// the lower indices; zeros are never chosen, so fewer than k come back when x has fewer than k
// nonzeros. It runs in three streaming passes over x (a histogram of the high 16 bits of |x|'s
// bit pattern, one of the low 16 bits inside the threshold bucket, then the output), with two
// 128 KiB histograms and no copy of x. x must be finite.
//
// RandKIndices: k distinct indices of [0, n), uniform, increasing, determined by `seed` (Floyd's
// algorithm over a bitmap of n bits).
//
// Pure and thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace tributary {

std::vector<uint32_t> TopKIndices(std::span<const float> x, size_t k);
std::vector<uint32_t> RandKIndices(size_t n, size_t k, uint64_t seed);

}  // namespace tributary
