# Every dependency comes from a Debian 12 package installed by scripts/bootstrap (docs/dependencies.md says why).
find_package(Threads REQUIRED)
find_package(Vulkan 1.3 REQUIRED)
find_package(glm CONFIG REQUIRED)
find_package(CLI11 CONFIG REQUIRED)
find_package(nlohmann_json CONFIG REQUIRED)
find_package(absl CONFIG REQUIRED)
find_program(QUOKKA_GLSLC glslc REQUIRED)

find_path(QUOKKA_STB_INCLUDE_DIR stb_image_write.h PATH_SUFFIXES stb REQUIRED)
add_library(quokka_stb INTERFACE)
target_include_directories(quokka_stb SYSTEM INTERFACE ${QUOKKA_STB_INCLUDE_DIR})

# tinygltf (glTF 2.0 import): header-only; its implementation is compiled in one TU of ours (apps/quokka/gltf_import.cpp)
# against the system nlohmann json and stb headers, not Debian's libtinygltf.so (which only Debian ships).
find_path(QUOKKA_TINYGLTF_INCLUDE_DIR tiny_gltf.h REQUIRED)
add_library(quokka_tinygltf INTERFACE)
target_include_directories(quokka_tinygltf SYSTEM INTERFACE ${QUOKKA_TINYGLTF_INCLUDE_DIR})
target_link_libraries(quokka_tinygltf INTERFACE quokka_stb nlohmann_json::nlohmann_json)

# shaderc: on Debian 12 neither libshaderc.so nor libshaderc_combined.a is self-contained. What links and runs is
# the static combined archive followed by glslang's and SPIRV-Tools' static archives (ARCHITECTURE §1).
find_library(QUOKKA_SHADERC_COMBINED libshaderc_combined.a REQUIRED)
set(_quokka_shaderc_libs ${QUOKKA_SHADERC_COMBINED})
foreach(lib glslang MachineIndependent OSDependent GenericCodeGen OGLCompiler SPIRV SPIRV-Tools-opt SPIRV-Tools)
  find_library(QUOKKA_LIB_${lib} lib${lib}.a REQUIRED)
  list(APPEND _quokka_shaderc_libs ${QUOKKA_LIB_${lib}})
endforeach()
add_library(quokka_shaderc INTERFACE)
target_link_libraries(quokka_shaderc INTERFACE ${_quokka_shaderc_libs} Threads::Threads)

find_package(PkgConfig REQUIRED)
pkg_check_modules(SPIRV_CROSS_C REQUIRED IMPORTED_TARGET spirv-cross-c-shared)
# The CLI's malloc (apps/quokka/CMakeLists.txt); sanitizer builds keep their own.
if(NOT QUOKKA_SANITIZE)
  pkg_check_modules(JEMALLOC REQUIRED IMPORTED_TARGET jemalloc)
endif()

if(QUOKKA_BUILD_TESTS)
  find_package(GTest CONFIG REQUIRED)
  include(GoogleTest)
endif()
if(QUOKKA_BUILD_BENCH)
  find_package(benchmark CONFIG REQUIRED)
endif()
