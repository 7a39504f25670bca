// The AVX-512 copy of the direct convolution kernels (direct_conv.h), built with
// -mavx512{f,vl,dq,bw} -mfma.
#include "train/cpu/direct_conv.h"
#define TRIB_CONV_NS avx512
#include "train/cpu/direct_conv_kernel.inc"
