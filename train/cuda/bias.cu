// Bias add (forward) and bias gradient (a column sum of the output gradient).
#include "train/cuda/kernels.h"
#include "train/cuda/launch.cuh"

namespace tributary::cuda {
namespace {

constexpr int kColsPerBlock = 32;  // one warp across columns: coalesced row reads
constexpr int kRowLanes = 8;       // threads down the rows of a block
constexpr int64_t kRowsPerSlab = 512;
constexpr int64_t kMaxSlabs = 256;

// Rows are split into slabs so a tall matrix (a convolution's output, batch * pixels rows) still
// spreads over many blocks; the slab count depends only on the shape, which keeps the summation
// order, and so the result, fixed.
int64_t Slabs(int64_t rows) {
  const int64_t s = (rows + kRowsPerSlab - 1) / kRowsPerSlab;
  return s < 1 ? 1 : (s > kMaxSlabs ? kMaxSlabs : s);
}

__global__ void BiasAddKernel(float* __restrict__ y, const float* __restrict__ bias, int64_t rows,
                              int64_t cols) {
  const int64_t total = rows * cols;
  for (int64_t i = GlobalIndex(); i < total; i += GridStride()) y[i] += bias[i % cols];
}

// Block (x: slab of columns, y: slab of rows) writes out[slab][col] = sum of its rows of column
// col.
__global__ void ColumnSumKernel(const float* __restrict__ m, int64_t rows, int64_t cols,
                                int64_t rows_per_slab, float* __restrict__ out) {
  __shared__ float part[kRowLanes][kColsPerBlock];
  const int64_t col = static_cast<int64_t>(blockIdx.x) * kColsPerBlock + threadIdx.x;
  const int64_t r0 = static_cast<int64_t>(blockIdx.y) * rows_per_slab;
  const int64_t r1 = r0 + rows_per_slab < rows ? r0 + rows_per_slab : rows;
  float acc = 0.0f;
  if (col < cols)
    for (int64_t r = r0 + threadIdx.y; r < r1; r += kRowLanes) acc += m[r * cols + col];
  part[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && col < cols) {
    float sum = 0.0f;
    for (int lane = 0; lane < kRowLanes; ++lane) sum += part[lane][threadIdx.x];
    out[static_cast<int64_t>(blockIdx.y) * cols + col] = sum;
  }
}

// db[col] = sum over slabs of partial[slab][col], slab by slab.
__global__ void SumSlabsKernel(const float* __restrict__ partial, int64_t slabs, int64_t cols,
                               float* __restrict__ db) {
  for (int64_t c = GlobalIndex(); c < cols; c += GridStride()) {
    float sum = 0.0f;
    for (int64_t s = 0; s < slabs; ++s) sum += partial[s * cols + c];
    db[c] = sum;
  }
}

}  // namespace

cudaError_t LaunchBiasAdd(float* y, const float* bias, int64_t rows, int64_t cols,
                          cudaStream_t stream) {
  TRIB_LAUNCH(BiasAddKernel, GridFor(rows * cols), kThreads, stream)(y, bias, rows, cols);
  return LaunchStatus();
}

int64_t BiasGradScratchSize(int64_t rows, int64_t cols) { return Slabs(rows) * cols; }

cudaError_t LaunchBiasGrad(const float* dy, int64_t rows, int64_t cols, float* scratch, float* db,
                           cudaStream_t stream) {
  const int64_t slabs = Slabs(rows);
  const int64_t rows_per_slab = (rows + slabs - 1) / slabs;
  const dim3 block(kColsPerBlock, kRowLanes);
  const dim3 grid(static_cast<unsigned>((cols + kColsPerBlock - 1) / kColsPerBlock),
                  static_cast<unsigned>(slabs));
  // With one slab the column sums are the answer; otherwise sum the slabs' partials in order.
  TRIB_LAUNCH(ColumnSumKernel, grid, block, stream)
  (dy, rows, cols, rows_per_slab, slabs == 1 ? db : scratch);
  if (slabs > 1)
    TRIB_LAUNCH(SumSlabsKernel, GridFor(cols), kThreads, stream)(scratch, slabs, cols, db);
  return LaunchStatus();
}

}  // namespace tributary::cuda
