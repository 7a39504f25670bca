# Installation: the client library and the component libraries it links, the public headers
# (include/tributary plus the generated tributary/config.h), a CMake package
# (find_package(Tributary CONFIG) -> Tributary::client, and Tributary::train for Tributary's own
# training engine: include/tributary/native_training.h), and the command-line binaries.
#
#   cmake --install build/release --prefix /opt/tributary
#   # in the app: find_package(Tributary CONFIG REQUIRED)  target_link_libraries(app Tributary::client)
include(GNUInstallDirs)  # already included by the top-level CMakeLists.txt; harmless again
include(CMakePackageConfigHelpers)

set(TRIBUTARY_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/Tributary"
    CACHE STRING "Where the Tributary CMake package files are installed")

# The libraries an app needs to link the client, in dependency order. Exported as Tributary::<name>.
set(_trib_export_libs
  tributary_options:options
  tributary_core:core
  tributary_data:data
  tributary_train:engine
  tributary_compression:compression
  tributary_crypto:crypto
  tributary_protocol:protocol
  tributary_privacy:privacy
  tributary_split_channel:split_channel
  tributary_client:client
  tributary_native:train)

set(_trib_targets "")
foreach(entry IN LISTS _trib_export_libs)
  string(REPLACE ":" ";" pair "${entry}")
  list(GET pair 0 target)
  list(GET pair 1 export_name)
  if(NOT TARGET ${target})
    message(FATAL_ERROR "TributaryInstall: target ${target} does not exist")
  endif()
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${export_name})
  list(APPEND _trib_targets ${target})
endforeach()

# tributary_options carries this build's warning flags (-Werror, -march=native, ...): they are for
# building Tributary, not for the apps that link it, so they stay in the build tree. (The installed
# headers are found under <prefix>/include: INCLUDES DESTINATION below.)
get_target_property(_trib_opts tributary_options INTERFACE_COMPILE_OPTIONS)
if(_trib_opts)
  set_property(TARGET tributary_options PROPERTY INTERFACE_COMPILE_OPTIONS
    "$<BUILD_INTERFACE:${_trib_opts}>")
endif()

install(TARGETS ${_trib_targets}
  EXPORT TributaryTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/tributary
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.h")
install(FILES ${PROJECT_BINARY_DIR}/generated/tributary/config.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tributary)

install(EXPORT TributaryTargets
  NAMESPACE Tributary::
  DESTINATION ${TRIBUTARY_INSTALL_CMAKEDIR})

configure_package_config_file(
  ${CMAKE_CURRENT_LIST_DIR}/TributaryConfig.cmake.in
  ${PROJECT_BINARY_DIR}/TributaryConfig.cmake
  INSTALL_DESTINATION ${TRIBUTARY_INSTALL_CMAKEDIR})
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/TributaryConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMinorVersion)
install(FILES
  ${PROJECT_BINARY_DIR}/TributaryConfig.cmake
  ${PROJECT_BINARY_DIR}/TributaryConfigVersion.cmake
  DESTINATION ${TRIBUTARY_INSTALL_CMAKEDIR})

# The binaries that exist in this build (OPTIONAL: a partial build installs what it built; so is the
# Python package, python/CMakeLists.txt). The libraries, headers and CMake package above are not
# optional: every program links the libraries, so any build of a program has them.
foreach(binary tributary-coordinator tributary-aggregator tributary-client tributary-sim tributary-certs tributary-train tributary-dp
    tributary)
  if(TARGET ${binary})
    install(TARGETS ${binary} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} OPTIONAL)
  endif()
endforeach()
