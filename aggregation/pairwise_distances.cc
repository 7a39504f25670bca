#include "aggregation/pairwise_distances.h"

#include <Eigen/Core>
#include <algorithm>
#include <cstring>

namespace tributary {
namespace {

constexpr size_t kPanel = 2048;  // columns per panel: n = 1000 gives an 8 MB slice

using RowMajorF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Adds the Gram matrix of columns [panel * kPanel, ...) for panels t, t + stride, ... into `gram`
// (lower triangle, double).
void GramPanels(const UpdateBuffer& buf, size_t t, size_t stride, Eigen::MatrixXd* gram) {
  const size_t n = buf.size(), dim = buf.dim();
  const size_t panels = (dim + kPanel - 1) / kPanel;
  RowMajorF slice(n, kPanel);
  Eigen::MatrixXf part(n, n);
  for (size_t p = t; p < panels; p += stride) {
    const size_t c0 = p * kPanel, width = std::min(kPanel, dim - c0);
    if (width != static_cast<size_t>(slice.cols())) slice.resize(n, width);
    for (size_t i = 0; i < n; ++i)
      std::memcpy(slice.data() + i * width, buf.row(i) + c0, width * sizeof(float));
    part.setZero();
    part.selfadjointView<Eigen::Lower>().rankUpdate(slice);
    gram->triangularView<Eigen::Lower>() += part.cast<double>();
  }
}

}  // namespace

std::vector<double> PairwiseSquaredDistances(const UpdateBuffer& buf, ThreadPool* pool) {
  const size_t n = buf.size();
  const size_t panels = (buf.dim() + kPanel - 1) / kPanel;
  const size_t tasks = std::max<size_t>(1, std::min(panels, pool ? pool->size() + 1 : 1));
  std::vector<Eigen::MatrixXd> grams(tasks, Eigen::MatrixXd::Zero(n, n));
  auto run = [&](size_t t) { GramPanels(buf, t, tasks, &grams[t]); };
  if (pool != nullptr && tasks > 1) {
    pool->ParallelFor(0, tasks, run);
  } else {
    run(0);
  }
  for (size_t t = 1; t < tasks; ++t) grams[0] += grams[t];
  const Eigen::MatrixXd& g = grams[0];
  std::vector<double> d(n * n, 0.0);
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < i; ++j) {
      const double v = std::max(0.0, g(i, i) + g(j, j) - 2.0 * g(i, j));
      d[i * n + j] = d[j * n + i] = v;
    }
  }
  return d;
}

}  // namespace tributary
