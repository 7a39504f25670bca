// Synthetic local data for the example: 10 classes of 784-feature vectors (the shape of a 28x28
// image, so the model matches the coordinator's "mlp"). Every class has a fixed prototype drawn
// from `task_seed` (the same on every client, so all clients learn the same task); each example is
// its class prototype plus Gaussian noise drawn from `client_seed` (different per client).
#pragma once

#include <cstdint>
#include <vector>

namespace edge_app {

inline constexpr int kFeatures = 784;
inline constexpr int kClasses = 10;

struct Examples {
  std::vector<float> x;  // n * kFeatures, example after example
  std::vector<int> y;    // n labels in [0, kClasses)
  int64_t size() const { return static_cast<int64_t>(y.size()); }
};

Examples MakeExamples(int64_t n, uint64_t task_seed, uint64_t client_seed, float noise = 0.6f);

}  // namespace edge_app
