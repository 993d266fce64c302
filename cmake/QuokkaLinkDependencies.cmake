# What quokka's libraries link against, found the same way by quokka's own build and by an installed package's
# quokkaConfig.cmake (this file is installed next to it). Every dependency is a Debian 12 package installed by
# scripts/bootstrap (docs/dependencies.md says why each is there). Dependencies the libraries only compile against
# (nlohmann json, stb, tinygltf) are not here: they are build-time only and never reach a consumer.
include_guard(GLOBAL)
find_package(Threads REQUIRED)
find_package(Vulkan 1.3 REQUIRED)
find_package(glm CONFIG REQUIRED)
find_package(absl CONFIG REQUIRED)
find_package(meshoptimizer CONFIG REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(QUOKKA_SPIRV_CROSS_C REQUIRED IMPORTED_TARGET spirv-cross-c-shared)

# The targets below are imported, so an exported quokka target names them (quokka_deps::…) and the consumer's
# quokkaConfig.cmake recreates them from this file instead of copying this machine's paths.
if(NOT TARGET quokka_deps::spirv_cross_c)
  add_library(quokka_deps::spirv_cross_c INTERFACE IMPORTED)
  target_link_libraries(quokka_deps::spirv_cross_c INTERFACE PkgConfig::QUOKKA_SPIRV_CROSS_C)
endif()

if(NOT TARGET quokka_deps::xxhash)
  find_library(QUOKKA_XXHASH_LIBRARY xxhash REQUIRED)
  add_library(quokka_deps::xxhash UNKNOWN IMPORTED)
  set_target_properties(quokka_deps::xxhash PROPERTIES IMPORTED_LOCATION ${QUOKKA_XXHASH_LIBRARY})
endif()

# shaderc: on Debian 12 neither libshaderc.so nor libshaderc_combined.a is self-contained. What links and runs is
# the static combined archive followed by glslang's and SPIRV-Tools' static archives.
if(NOT TARGET quokka_deps::shaderc)
  find_library(QUOKKA_SHADERC_COMBINED libshaderc_combined.a REQUIRED)
  set(_quokka_shaderc_libs ${QUOKKA_SHADERC_COMBINED})
  foreach(lib glslang MachineIndependent OSDependent GenericCodeGen OGLCompiler SPIRV SPIRV-Tools-opt SPIRV-Tools)
    find_library(QUOKKA_LIB_${lib} lib${lib}.a REQUIRED)
    list(APPEND _quokka_shaderc_libs ${QUOKKA_LIB_${lib}})
  endforeach()
  add_library(quokka_deps::shaderc INTERFACE IMPORTED)
  target_link_libraries(quokka_deps::shaderc INTERFACE ${_quokka_shaderc_libs} Threads::Threads)
  unset(_quokka_shaderc_libs)
endif()
