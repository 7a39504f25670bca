// ClipL2: bounding an update's L2 norm, the one implementation that every clipping site calls:
// the coordinator's norm clipping stage (aggregation/norm_clip.h), differential privacy on the
// coordinator (privacy/dp/dp_aggregator.h) and on the clients (client/secagg_task.h). It lives
// here, below all three, so that a client's clipped update and the coordinator's are the same
// bits by construction (tests/compression/l2_clip_test.cc, tests/client/secagg_clip_test.cc).
//
// The norm is sqrt(sum of v^2), summed in double in index order (a finite float squared is at
// most 1.2e77, so the sum of any finite update is finite). When it exceeds max_norm, every value
// is multiplied in float by factor = float(max_norm / norm); the clipped norm is then max_norm up
// to float rounding (a relative error below n * 2^-24). A norm at or below max_norm leaves the
// values untouched (factor 1). A zero vector has norm 0 and is never clipped.
//
// Pure function; thread-safe.
#pragma once

#include <span>

#include "tributary/result.h"

namespace tributary {

struct L2Clip {
  double norm = 0.0;     // ||values||_2 before clipping
  float factor = 1.0f;   // what every value was multiplied by (1 when not clipped)
  bool clipped = false;  // norm > max_norm
};

// The L2 norm of `values`; InvalidArgument when a value is NaN or infinite (the norm is then not
// finite).
Result<double> L2Norm(std::span<const float> values);

// The largest |value| (the L-infinity norm); NaN when a value is NaN, so that a range check of
// the form `!(LInfNorm(v) * w < bound)` refuses it.
double LInfNorm(std::span<const float> values);

// Clips `values` in place to L2 norm `max_norm`. InvalidArgument, and `values` unchanged, when
// max_norm is not a finite number > 0 or a value is NaN or infinite.
Result<L2Clip> ClipL2(std::span<float> values, double max_norm);

}  // namespace tributary
