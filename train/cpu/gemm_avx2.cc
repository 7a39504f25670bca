// The AVX2+FMA copy of Gemm's kernels (gemm.h), built with -mavx2 -mfma and Eigen's namespace
// renamed, so nothing here is shared with the baseline build of the library.
#define Eigen tributary_eigen_avx2
#define TRIB_GEMM_NS avx2
#include "train/cpu/gemm_kernel.inc"
