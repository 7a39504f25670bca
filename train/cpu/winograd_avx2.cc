// The AVX2+FMA copy of the Winograd transforms (winograd.h), built with -mavx2 -mfma.
#define TRIB_WINO_NS avx2
#include "train/cpu/winograd_kernel.inc"
