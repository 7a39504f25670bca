#include "train/cpu/gemm.h"

#include <cstdlib>
#include <cstring>

#define TRIB_GEMM_NS base
#include "train/cpu/gemm_kernel.inc"

namespace tributary::cpu {

#if TRIBUTARY_GEMM_AVX2
namespace avx2 {
void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a,
          const float* b, float* c, bool accumulate);
}  // namespace avx2
namespace avx512 {
void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a,
          const float* b, float* c, bool accumulate);
}  // namespace avx512
#endif

namespace {

using GemmFn = void (*)(bool, bool, int64_t, int64_t, int64_t, const float*, const float*, float*,
                        bool);

struct GemmChoice {
  GemmFn fn;
  const char* path;
  SimdPath simd;
};

GemmChoice Choose() {
#if TRIBUTARY_GEMM_AVX2
  const char* forced = std::getenv("TRIBUTARY_SIMD");
  const bool baseline = forced != nullptr && std::strcmp(forced, "baseline") == 0;
  const bool avx2 = forced != nullptr && std::strcmp(forced, "avx2") == 0;
  __builtin_cpu_init();
  if (!baseline && !avx2 && __builtin_cpu_supports("avx512f") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512bw"))
    return {avx512::Gemm, "avx512", SimdPath::kAvx512};
  if (!baseline && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return {avx2::Gemm, "avx2+fma", SimdPath::kAvx2};
  return {base::Gemm, "baseline", SimdPath::kBaseline};
#else
  return {base::Gemm, "native", SimdPath::kNative};
#endif
}

const GemmChoice& Chosen() {
  static const GemmChoice choice = Choose();
  return choice;
}

}  // namespace

void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a,
          const float* b, float* c, bool accumulate) {
  Chosen().fn(trans_a, trans_b, m, n, k, a, b, c, accumulate);
}

const char* GemmPath() { return Chosen().path; }

SimdPath ChosenSimdPath() { return Chosen().simd; }

}  // namespace tributary::cpu
