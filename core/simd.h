// Run-time choice of vector width for hot loops.
//
// Tributary's libraries are built for the baseline of their architecture (x86-64: SSE2; aarch64:
// armv8-a with NEON), so they run on every CPU of it. A loop that profits from wider vectors is
// marked TRIB_SIMD_CLONES: on x86-64 GCC then compiles it three times, for the baseline, for AVX2
// and for x86-64-v4 (AVX-512), and the dynamic loader picks the best copy the CPU supports when the
// program starts (an ifunc; GCC's target_clones). Every file is compiled with -ffp-contract=off
// (cmake/TributaryOptions.cmake), so no copy contracts a * b + c into a fused multiply-add: all
// copies round every operation the same way and give bitwise-identical results, whatever the CPU
// (and the same as the aarch64 build). Where the whole build already targets this CPU
// (-march=native, TRIBUTARY_NATIVE) or the target is not x86-64, the macro is empty.
//
// A marked function must not be inline (each copy is a separate symbol: <fn>.default,
// <fn>.avx2, <fn>.arch_x86_64_v4), and the clones are, with the GEMM copies below, the only
// AVX2/AVX-512 code `objdump` may find in an installed library
// (tests/integration/portable_isa_test.py).
//
// The CPU engine's GEMMs are dispatched differently: AVX2+FMA and AVX-512 builds of Eigen's
// kernels, chosen at first use (train/cpu/gemm.h).
#pragma once

// Sanitizer builds have no clones: an ifunc resolver runs while the dynamic loader relocates the
// program, before the sanitizer's runtime is up, and the instrumented resolver crashes under TSan.
// They test the baseline copy, which every clone matches bit for bit.
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define TRIB_SIMD_NO_CLONES 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define TRIB_SIMD_NO_CLONES 1
#endif
#endif

#if defined(TRIB_SIMD_NO_CLONES)
#define TRIB_SIMD_CLONES
#elif defined(__x86_64__) && !defined(__AVX2__) && defined(__GNUC__) && !defined(__clang__)
#define TRIB_SIMD_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#elif defined(__x86_64__) && !defined(__AVX2__) && defined(__clang__)
#define TRIB_SIMD_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define TRIB_SIMD_CLONES
#endif
