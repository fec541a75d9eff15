# mp's CMake package. `cmake --install build --prefix P` installs the
# headers, the libraries, the tools, libMPPlugin.so and
# P/lib/cmake/mp/MPConfig.cmake, so a downstream project writes
#   find_package(MP CONFIG REQUIRED)
#   target_link_libraries(my-tool PRIVATE MP::MLIRMPTransforms)
# the way out-of-tree projects consume MLIR itself (docs/user-guide.md,
# "Using mp from another compiler"). The build tree is a package as well:
# -DMP_DIR=<build>/lib/cmake/mp.

include(CMakePackageConfigHelpers)
set(MP_INSTALL_PACKAGE_DIR lib/cmake/mp)
set(mpBuildPackageDir ${MP_BINARY_DIR}/lib/cmake/mp)

# Headers: mp's C++ and C APIs, what tablegen generated from them, and
# libmprt's C API (with the CUDA runtime's ABI where it is built).
install(DIRECTORY ${MP_SOURCE_DIR}/include/mp ${MP_SOURCE_DIR}/include/mp-c
  DESTINATION include
  FILES_MATCHING PATTERN "*.h" PATTERN "*.td")
install(DIRECTORY ${MP_BINARY_DIR}/include/mp
  DESTINATION include
  FILES_MATCHING PATTERN "*.inc")
install(DIRECTORY ${MP_SOURCE_DIR}/runtime/include/mprt DESTINATION include)
if(TARGET mprt_cuda)
  install(DIRECTORY ${MP_SOURCE_DIR}/runtime/cuda/include/mprt
    DESTINATION include)
endif()

install(TARGETS mp-opt mp-run mp-compile RUNTIME DESTINATION bin)
install(TARGETS MPPlugin LIBRARY DESTINATION lib)

get_property(mpExports GLOBAL PROPERTY MP_EXPORTS)
export(TARGETS ${mpExports} NAMESPACE MP::
  FILE ${mpBuildPackageDir}/MPTargets.cmake)
install(EXPORT MPTargets NAMESPACE MP:: DESTINATION ${MP_INSTALL_PACKAGE_DIR})

write_basic_package_version_file(${mpBuildPackageDir}/MPConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)

# MPConfig.cmake twice: with absolute paths into the build tree, and with
# paths relative to the installed file (a moved prefix still works).
set(MP_CONFIG_PREFIX "${MP_BINARY_DIR}")
set(MP_CONFIG_INCLUDE_DIRS
  "${MP_SOURCE_DIR}/include;${MP_BINARY_DIR}/include;${MP_SOURCE_DIR}/runtime/include")
configure_file(${CMAKE_CURRENT_LIST_DIR}/MPConfig.cmake.in
  ${mpBuildPackageDir}/MPConfig.cmake @ONLY)

set(MP_CONFIG_PREFIX "\${CMAKE_CURRENT_LIST_DIR}/../../..")
set(MP_CONFIG_INCLUDE_DIRS "\${MP_PREFIX}/include")
configure_file(${CMAKE_CURRENT_LIST_DIR}/MPConfig.cmake.in
  ${MP_BINARY_DIR}/CMakeFiles/MPConfig.install.cmake @ONLY)
install(FILES ${MP_BINARY_DIR}/CMakeFiles/MPConfig.install.cmake
  DESTINATION ${MP_INSTALL_PACKAGE_DIR} RENAME MPConfig.cmake)
install(FILES ${mpBuildPackageDir}/MPConfigVersion.cmake
  DESTINATION ${MP_INSTALL_PACKAGE_DIR})
