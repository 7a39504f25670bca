// The AVX-512 copy of the Winograd transforms (winograd.h), built with -mavx512{f,vl,dq,bw} -mfma.
#define TRIB_WINO_NS avx512
#include "train/cpu/winograd_kernel.inc"
