// The AVX-512 copy of Gemm's kernels (gemm.h), built with -mavx512{f,vl,dq,bw} -mfma and Eigen's
// namespace renamed, so nothing here is shared with the baseline build of the library.
#define Eigen tributary_eigen_avx512
#define TRIB_GEMM_NS avx512
#include "train/cpu/gemm_kernel.inc"
