# Resolves TRIBUTARY_CUDA (AUTO|ON|OFF) into TRIBUTARY_HAVE_CUDA.
# AUTO enables CUDA when nvcc is found (on PATH or in /usr/local/cuda); ON requires it.
set(TRIBUTARY_HAVE_CUDA OFF)
set(TRIBUTARY_CUDA_RUNTIME_VERSION 0)
string(TOUPPER "${TRIBUTARY_CUDA}" _trib_cuda)
if(NOT _trib_cuda STREQUAL "OFF")
  if(NOT CMAKE_CUDA_COMPILER)
    find_program(_trib_nvcc nvcc HINTS /usr/local/cuda/bin)
    if(_trib_nvcc)
      set(CMAKE_CUDA_COMPILER "${_trib_nvcc}" CACHE FILEPATH "CUDA compiler")
    endif()
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    # CUDA 13 has no default architecture that CMake 3.25 knows, so name them:
    # 80 = A100, 90 = H100/H200. Override with -DCMAKE_CUDA_ARCHITECTURES=...
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES OR CMAKE_CUDA_ARCHITECTURES STREQUAL "")
      set(CMAKE_CUDA_ARCHITECTURES "80;90" CACHE STRING "CUDA architectures" FORCE)
    endif()
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    set(TRIBUTARY_HAVE_CUDA ON)
    # The CUDA runtime the module links, as CUDART_VERSION writes it (13000 for 13.0): the
    # programs report it without loading the module (train/device.cc, QueryCuda).
    math(EXPR TRIBUTARY_CUDA_RUNTIME_VERSION
         "${CUDAToolkit_VERSION_MAJOR} * 1000 + ${CUDAToolkit_VERSION_MINOR} * 10")
    message(STATUS "Tributary: CUDA backend ON (${CMAKE_CUDA_COMPILER}, archs ${CMAKE_CUDA_ARCHITECTURES})")
  elseif(_trib_cuda STREQUAL "ON")
    message(FATAL_ERROR "TRIBUTARY_CUDA=ON but no CUDA compiler (nvcc) was found")
  else()
    message(STATUS "Tributary: CUDA backend OFF (nvcc not found)")
  endif()
else()
  message(STATUS "Tributary: CUDA backend OFF (TRIBUTARY_CUDA=OFF)")
endif()
