# Compiler flags shared by every Tributary target, applied through the
# tributary_options interface library.
add_library(tributary_options INTERFACE)
target_compile_features(tributary_options INTERFACE cxx_std_20)
# GCC 12 false positives: -Wmaybe-uninitialized inside Eigen's AVX-512 intrinsics, and -Wrestrict
# in libstdc++'s std::string concatenation at -O3 (GCC bug 105329). Clang has neither warning
# (nor -Wshadow=local, which it reports as an unknown option), so those flags are GCC-only.
# -ffp-contract=off: the compiler never fuses a * b + c into one rounding, so a loop gives the same
# bits whatever vector width or CPU it is built for (core/simd.h); Eigen's kernels use their own
# intrinsics and are not affected.
target_compile_options(tributary_options INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wnon-virtual-dtor -ffp-contract=off>
  $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<CXX_COMPILER_ID:GNU>>:-Wshadow=local -Wno-maybe-uninitialized -Wno-restrict>)
if(TRIBUTARY_WERROR)
  target_compile_options(tributary_options INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
endif()
if(TRIBUTARY_NATIVE)
  target_compile_options(tributary_options INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-march=native>)
  message(STATUS "TRIBUTARY_NATIVE=ON: every target is built for this machine's CPU only; "
                 "do not install or ship this build")
endif()
# Run-time dispatch (core/simd.h): on x86-64, unless everything is already built for this CPU, the
# hot loops carry AVX2 and AVX-512 clones chosen at load time (GCC target_clones), and the CPU
# engine's GEMMs AVX2+FMA and AVX-512 copies of Eigen chosen at first use (train/cpu/gemm.h).
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$" AND NOT TRIBUTARY_NATIVE)
  set(TRIBUTARY_X86_DISPATCH ON)
else()
  set(TRIBUTARY_X86_DISPATCH OFF)
endif()
if(TRIBUTARY_SANITIZE)
  target_compile_options(tributary_options INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=${TRIBUTARY_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all>)
  target_link_options(tributary_options INTERFACE -fsanitize=${TRIBUTARY_SANITIZE})
  # Asio's fenced blocks use std::atomic_thread_fence, which TSan does not model; gcc 12 warns
  # about each (-Wtsan). The warning is about Asio's headers, not ours, so it is off here. (No
  # false report has come of it in the suites scripts/test runs under TSan.)
  if(TRIBUTARY_SANITIZE MATCHES "thread" AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(tributary_options INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Wno-tsan>)
  endif()
endif()
target_include_directories(tributary_options INTERFACE
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
  $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}/generated>)
