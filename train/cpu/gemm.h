// Gemm: the CPU engine's matrix products, with the instruction set chosen at run time.
//
//   c (m x n)  =  op(a) * op(b)        (accumulate: c += op(a) * op(b))
//
// op(a) is m x k and op(b) is k x n; op transposes when trans_a / trans_b is set, so `a` is stored
// m x k (or k x m when transposed) and `b` k x n (or n x k), all row-major and contiguous. The
// product is Eigen's.
//
// On x86-64 builds for the baseline CPU (the default, TRIBUTARY_NATIVE off), three copies of
// Eigen's kernels are built: for the baseline (SSE2), for AVX2+FMA and for AVX-512 (F, VL, DQ, BW),
// each in its own namespace (gemm_kernel.inc), and the first call picks the widest the CPU and OS
// support. They round differently (fused multiply-adds, other block sizes), so the engine is
// bitwise deterministic for a seed on one path; TRIBUTARY_SIMD=baseline in the environment forces
// the baseline path, which gives the same bits on every x86-64 CPU (TRIBUTARY_SIMD=avx2 the
// AVX2+FMA path where the CPU has it, to test that copy on an AVX-512 machine). Elsewhere (aarch64,
// where NEON is the baseline; native builds) there is one copy.
//
// Thread-safe: the choice is made once; the kernels keep no state of their own.
#pragma once

#include <cstdint>

namespace tributary::cpu {

void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a,
          const float* b, float* c, bool accumulate);

// "avx512", "avx2+fma" or "baseline" on x86-64 builds with dispatch, "native" otherwise: the path
// Gemm takes in this process.
const char* GemmPath();

// The same choice as a value, for the other kernels built once per path (direct_conv.h), so that
// a process runs every kernel on one path.
enum class SimdPath { kBaseline, kAvx2, kAvx512, kNative };
SimdPath ChosenSimdPath();

}  // namespace tributary::cpu
