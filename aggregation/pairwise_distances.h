// PairwiseSquaredDistances: ||u_i - u_j||^2 for every pair of updates in an UpdateBuffer, the
// input of Krum, Multi-Krum and Bulyan.
//
// Computed from the Gram matrix, ||a - b||^2 = |a|^2 + |b|^2 - 2 a.b, so the work is one
// symmetric rank-k update (Eigen, vectorized and cache-blocked) instead of n^2 / 2 passes over
// memory: the coordinates are cut into panels of kPanel columns, each panel's n x kPanel slice is
// copied contiguous and multiplied in float, and the panel products are summed in double. Small
// negative results of cancellation are clamped to 0. Panels are spread over `pool` (may be null).
#pragma once

#include <vector>

#include "aggregation/update_buffer.h"
#include "core/thread_pool.h"

namespace tributary {

// Row-major n x n matrix of squared distances (n = buffer.size()), zero on the diagonal.
std::vector<double> PairwiseSquaredDistances(const UpdateBuffer& buffer, ThreadPool* pool);

}  // namespace tributary
