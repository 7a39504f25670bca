#include "synthetic_data.h"

#include <random>

namespace edge_app {

Examples MakeExamples(int64_t n, uint64_t task_seed, uint64_t client_seed, float noise) {
  std::mt19937_64 task_rng(task_seed);
  std::uniform_real_distribution<float> pixel(0.0f, 1.0f);
  std::vector<float> prototypes(static_cast<size_t>(kClasses) * kFeatures);
  for (float& p : prototypes) p = pixel(task_rng);

  std::mt19937_64 rng(client_seed);
  std::normal_distribution<float> gauss(0.0f, noise);
  std::uniform_int_distribution<int> label(0, kClasses - 1);
  Examples out;
  out.x.resize(static_cast<size_t>(n) * kFeatures);
  out.y.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const int c = label(rng);
    out.y[i] = c;
    for (int f = 0; f < kFeatures; ++f)
      out.x[i * kFeatures + f] = prototypes[c * kFeatures + f] + gauss(rng);
  }
  return out;
}

}  // namespace edge_app
