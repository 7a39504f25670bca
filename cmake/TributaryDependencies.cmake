# Finds the Debian-packaged libraries Tributary builds on. scripts/setup-deps installs them.
find_package(Threads REQUIRED)
find_package(Eigen3 3.3 REQUIRED NO_MODULE)
find_package(ZLIB REQUIRED)
find_package(OpenSSL 3 REQUIRED)
find_package(Boost 1.74 REQUIRED)
find_package(cereal REQUIRED)
find_package(fmt REQUIRED)
find_package(spdlog REQUIRED)
find_package(nlohmann_json 3 REQUIRED)
find_package(tomlplusplus REQUIRED)
find_package(CLI11 REQUIRED)
# prometheus-cpp (prometheus-cpp-dev): the coordinator's metrics (monitor/). Required natively; a
# cross build (the aarch64 edge suite) has no coordinator monitor without it.
if(CMAKE_CROSSCOMPILING)
  find_package(prometheus-cpp CONFIG QUIET)
else()
  find_package(prometheus-cpp CONFIG REQUIRED)
endif()
set(TRIBUTARY_HAVE_MONITOR ${prometheus-cpp_FOUND})
# SQLite (libsqlite3-dev, through CMake's FindSQLite3): the run history (history/) and the
# `tributary` CLI that reads it. Required natively; a cross build has no run history without it.
if(CMAKE_CROSSCOMPILING)
  find_package(SQLite3 QUIET)
else()
  find_package(SQLite3 REQUIRED)
endif()
set(TRIBUTARY_HAVE_HISTORY ${SQLite3_FOUND})
find_package(zstd REQUIRED)  # libzstd-dev ships its CMake package (zstd::libzstd_shared)

# fmt (which formats the library's log lines and messages) and toml++ (the configuration files) as
# shared libraries the installed package asks for, or, with TRIBUTARY_HEADER_ONLY_DEPS, compiled
# into Tributary's own objects from their headers, so an app that links the client statically
# needs only OpenSSL and zstd (docs/embedding.md, bench/footprint.sh).
if(TRIBUTARY_HEADER_ONLY_DEPS)
  add_library(tributary_toml_header_only INTERFACE)
  get_target_property(_toml_includes tomlplusplus::tomlplusplus INTERFACE_INCLUDE_DIRECTORIES)
  target_include_directories(tributary_toml_header_only INTERFACE ${_toml_includes})
  target_compile_definitions(tributary_toml_header_only INTERFACE TOML_HEADER_ONLY=1)
  set(TRIBUTARY_FMT_TARGET $<BUILD_INTERFACE:fmt::fmt-header-only>)
  set(TRIBUTARY_TOML_TARGET $<BUILD_INTERFACE:tributary_toml_header_only>)
  set(TRIBUTARY_PACKAGE_DEPENDENCIES "")
else()
  set(TRIBUTARY_FMT_TARGET fmt::fmt)
  set(TRIBUTARY_TOML_TARGET tomlplusplus::tomlplusplus)
  set(TRIBUTARY_PACKAGE_DEPENDENCIES "find_dependency(fmt)\nfind_dependency(tomlplusplus)")
endif()
# libzip (libzip-dev) reads .npz archives (train/data/npz.cc); Debian ships a pkg-config file.
find_package(PkgConfig REQUIRED)
pkg_check_modules(LIBZIP REQUIRED IMPORTED_TARGET libzip)
if(TRIBUTARY_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
if(TRIBUTARY_BUILD_BENCH)
  find_package(benchmark REQUIRED)
endif()

# Python bindings (python/): Debian's python3-dev and pybind11-dev. Debian's interpreter is preferred
# (/usr/bin/python3: the one python3-numpy and python3-torch are installed for), unless
# Python3_EXECUTABLE says otherwise.
set(TRIBUTARY_WITH_PYTHON OFF)
if(NOT TRIBUTARY_PYTHON STREQUAL "OFF" AND (TRIBUTARY_PYTHON STREQUAL "ON" OR NOT TRIBUTARY_SANITIZE))
  if(NOT DEFINED Python3_EXECUTABLE AND EXISTS /usr/bin/python3)
    set(Python3_EXECUTABLE /usr/bin/python3)
  endif()
  find_package(Python3 COMPONENTS Interpreter Development.Module)
  if(Python3_FOUND)
    find_package(pybind11 2.6 CONFIG)
  endif()
  if(Python3_FOUND AND pybind11_FOUND)
    set(TRIBUTARY_WITH_PYTHON ON)
    message(STATUS "Tributary: Python bindings for ${Python3_EXECUTABLE} (${Python3_VERSION}), pybind11 ${pybind11_VERSION}")
  elseif(TRIBUTARY_PYTHON STREQUAL "ON")
    message(FATAL_ERROR "TRIBUTARY_PYTHON=ON but Python3 development files or pybind11 were not found (Debian: python3-dev pybind11-dev; scripts/setup-deps installs them)")
  else()
    message(STATUS "Tributary: no Python bindings (python3-dev or pybind11-dev missing)")
  endif()
endif()

# MPI (libopenmpi-dev and openmpi-bin, or MPICH): tributary-sim's distributed simulation under
# mpirun (sim/mpi_link.h). AUTO builds it when an MPI library is found natively and no sanitizer
# is on (the sanitizer passes test the distribution with ranks as threads, sim/rank_link.h).
set(TRIBUTARY_MPI "AUTO" CACHE STRING
    "Distributed simulation over MPI (tributary-sim under mpirun): AUTO (when MPI is found, natively, without sanitizers), ON or OFF")
set_property(CACHE TRIBUTARY_MPI PROPERTY STRINGS AUTO ON OFF)
set(TRIBUTARY_HAVE_MPI OFF)
if(TRIBUTARY_MPI STREQUAL "ON" OR (TRIBUTARY_MPI STREQUAL "AUTO" AND NOT TRIBUTARY_SANITIZE AND NOT CMAKE_CROSSCOMPILING))
  find_package(MPI COMPONENTS C)
  if(MPI_C_FOUND)
    set(TRIBUTARY_HAVE_MPI ON)
    message(STATUS "Tributary: distributed simulation over MPI ${MPI_C_VERSION} (${MPI_C_LIBRARY_VERSION_STRING})")
  elseif(TRIBUTARY_MPI STREQUAL "ON")
    message(FATAL_ERROR "TRIBUTARY_MPI=ON but no MPI library was found (Debian: libopenmpi-dev openmpi-bin; scripts/setup-deps installs them)")
  else()
    message(STATUS "Tributary: no distributed simulation (no MPI library: libopenmpi-dev)")
  endif()
endif()
