#include "train/cuda/gemm.h"

#include <limits>
#include <string>

#include "train/cuda/cuda_check.h"

namespace tributary::cuda {

Status GemmRowMajor(cublasHandle_t handle, bool trans_a, bool trans_b, int64_t m, int64_t n,
                    int64_t k, float alpha, const float* a, int64_t lda, const float* b,
                    int64_t ldb, float beta, float* c, int64_t ldc) {
  constexpr int64_t kMax = std::numeric_limits<int>::max();
  for (int64_t v : {m, n, k, lda, ldb, ldc})
    if (v < 0 || v > kMax)
      return Status::OutOfRange("GEMM dimension " + std::to_string(v) +
                                " does not fit cuBLAS's 32-bit int");
  if (m == 0 || n == 0) return Status::Ok();
  // Column-major view: C^T [n x m] = op(B)^T [n x k] * op(A)^T [k x m]. B stored row-major is B^T
  // column-major, so "no transpose" in row-major terms is CUBLAS_OP_N on the swapped operands.
  CUBLAS_CHECK(cublasSgemm(
      handle, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
      static_cast<int>(n), static_cast<int>(m), static_cast<int>(k), &alpha, b,
      static_cast<int>(ldb), a, static_cast<int>(lda), &beta, c, static_cast<int>(ldc)));
  return Status::Ok();
}

}  // namespace tributary::cuda
