// The AVX2+FMA copy of the direct convolution kernels (direct_conv.h), built with -mavx2 -mfma.
#include "train/cpu/direct_conv.h"
#define TRIB_CONV_NS avx2
#include "train/cpu/direct_conv_kernel.inc"
