// Row-major single-precision GEMM on cuBLAS (which is column-major).
//
//   C[M, N] = alpha * op(A) * op(B) + beta * C,   op(X) = X or X^T
//
// Every matrix is row-major with the given leading dimension (elements between rows as stored).
// A row-major matrix is its transpose in column-major, so this computes C^T = op(B)^T op(A)^T by
// calling cublasSgemm with the operands swapped. Queued on the handle's stream; Status on failure.
#pragma once

#include <cublas_v2.h>

#include <cstdint>

#include "tributary/status.h"

namespace tributary::cuda {

Status GemmRowMajor(cublasHandle_t handle, bool trans_a, bool trans_b, int64_t m, int64_t n,
                    int64_t k, float alpha, const float* a, int64_t lda, const float* b,
                    int64_t ldb, float beta, float* c, int64_t ldc);

}  // namespace tributary::cuda
