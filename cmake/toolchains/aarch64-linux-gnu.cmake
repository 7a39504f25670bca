# Cross-compiling for 64-bit ARM Linux (aarch64) with Debian's cross toolchain and arm64 multiarch
# libraries (scripts/setup-deps --aarch64 installs both). The tests run under qemu-user:
# ctest and gtest_discover_tests call every aarch64 binary through CMAKE_CROSSCOMPILING_EMULATOR.
#
#   cmake -S . -B build/aarch64 -G Ninja --toolchain cmake/toolchains/aarch64-linux-gnu.cmake
#   (or: cmake --preset aarch64; scripts/test-aarch64 builds and runs the suite)
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
# Debian's multiarch layout: libraries and CMake packages under /usr/lib/aarch64-linux-gnu,
# architecture-independent ones (headers, /usr/share/cmake) shared with the host.
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
# qemu-user runs aarch64 binaries; the arm64 loader and libc come from libc6:arm64 under /.
find_program(TRIBUTARY_QEMU_AARCH64 qemu-aarch64 REQUIRED)
set(CMAKE_CROSSCOMPILING_EMULATOR "${TRIBUTARY_QEMU_AARCH64};-L;/")
# cereal is header-only and "Architecture: all", but Debian 12 installs its CMake package under the
# build machine's triplet only; its headers are the same for every architecture.
file(GLOB _trib_cereal_dirs /usr/lib/*-linux-gnu/cmake/cereal)
if(_trib_cereal_dirs)
  list(GET _trib_cereal_dirs 0 _trib_cereal_dir)
  set(cereal_DIR "${_trib_cereal_dir}" CACHE PATH "cereal's CMake package (header-only)")
endif()
