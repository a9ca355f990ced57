# Installs libattn and libattnrt with their public headers, a CMake package
# (find_package(attn) gives attn::attn and attn::attnrt), attn.pc for
# pkg-config, and the Python binding. Included by the top-level CMakeLists.
include(CMakePackageConfigHelpers)

set(ATTN_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/attn)

# attnrt's own CMakeLists only knows the build tree; installed, its headers
# (attnrt.h, which includes attnrt_comm.h) sit in include/attn/ and are found
# both as "attnrt.h" and <attn/attnrt.h>.
target_include_directories(attnrt INTERFACE
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}/attn>)

install(TARGETS attn attnrt EXPORT attnTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${PROJECT_SOURCE_DIR}/include/attn/attn.h
              ${PROJECT_SOURCE_DIR}/include/attn/attn_mlir.h
              ${PROJECT_SOURCE_DIR}/runtime/attnrt.h
              ${PROJECT_SOURCE_DIR}/runtime/attnrt_comm.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/attn)
install(EXPORT attnTargets NAMESPACE attn:: DESTINATION ${ATTN_CMAKE_DIR})

configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/attnConfig.cmake.in
  ${PROJECT_BINARY_DIR}/attnConfig.cmake
  INSTALL_DESTINATION ${ATTN_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/attnConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/attnConfig.cmake
              ${PROJECT_BINARY_DIR}/attnConfigVersion.cmake
        DESTINATION ${ATTN_CMAKE_DIR})

# attn.pc finds its prefix relative to itself, so `cmake --install --prefix`
# may move the tree.
file(RELATIVE_PATH ATTN_PC_TO_PREFIX
  "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
string(REGEX REPLACE "/$" "" ATTN_PC_TO_PREFIX "${ATTN_PC_TO_PREFIX}")
configure_file(${CMAKE_CURRENT_LIST_DIR}/attn.pc.in
  ${PROJECT_BINARY_DIR}/attn.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/attn.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# The Python binding: pure Python, finds the libraries two levels up.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/python/attn
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/python
        PATTERN __pycache__ EXCLUDE)
