# The installed package: `cmake --install <build> --prefix <p>` puts the headers under <p>/include/quokka, the module
# libraries under <p>/lib, the `quokka` tool under <p>/bin and the CMake package under <p>/lib/cmake/quokka, so that a
# project does
#     find_package(quokka 0.1 REQUIRED)
#     target_link_libraries(app PRIVATE quokka::quokka)
# and gets every module with its include directories, definitions and link dependencies (found again on the
# consumer's machine by QuokkaLinkDependencies.cmake, never copied as paths). Each module is exported too
# (quokka::gpu, quokka::gltf, …) for projects that want less.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

get_property(_quokka_modules GLOBAL PROPERTY QUOKKA_MODULES)
add_library(quokka_library INTERFACE)
add_library(quokka::quokka ALIAS quokka_library)
set_target_properties(quokka_library PROPERTIES EXPORT_NAME quokka)
target_link_libraries(quokka_library INTERFACE ${_quokka_modules})

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/quokka DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS ${_quokka_modules} quokka_library EXPORT quokkaTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS quokka RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

set(_quokka_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/quokka)
install(EXPORT quokkaTargets NAMESPACE quokka:: DESTINATION ${_quokka_cmake_dir})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/quokkaConfig.cmake.in
  ${PROJECT_BINARY_DIR}/quokkaConfig.cmake INSTALL_DESTINATION ${_quokka_cmake_dir})
# 0.x: a minor version may change the API, so only the same minor version is compatible.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/quokkaConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/quokkaConfig.cmake ${PROJECT_BINARY_DIR}/quokkaConfigVersion.cmake
  ${PROJECT_SOURCE_DIR}/cmake/QuokkaLinkDependencies.cmake DESTINATION ${_quokka_cmake_dir})
