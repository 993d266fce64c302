# Every dependency comes from a Debian 12 package installed by scripts/bootstrap (docs/dependencies.md says why).
# What the libraries link against is shared with the installed package (QuokkaLinkDependencies.cmake); the rest is
# needed to build only: the CLI, tests, benchmarks and header-only parsers compiled into our own sources.
include(QuokkaLinkDependencies)
find_package(CLI11 CONFIG REQUIRED)
find_package(nlohmann_json CONFIG REQUIRED)
find_program(QUOKKA_GLSLC glslc REQUIRED)

find_path(QUOKKA_STB_INCLUDE_DIR stb_image_write.h PATH_SUFFIXES stb REQUIRED)
add_library(quokka_stb INTERFACE)
target_include_directories(quokka_stb SYSTEM INTERFACE ${QUOKKA_STB_INCLUDE_DIR})

# tinygltf (glTF 2.0 import): header-only; its implementation is compiled in one TU of ours (src/gltf/load.cpp)
# against the system nlohmann json and stb headers, not Debian's libtinygltf.so (which only Debian ships).
find_path(QUOKKA_TINYGLTF_INCLUDE_DIR tiny_gltf.h REQUIRED)
add_library(quokka_tinygltf INTERFACE)
target_include_directories(quokka_tinygltf SYSTEM INTERFACE ${QUOKKA_TINYGLTF_INCLUDE_DIR})
target_link_libraries(quokka_tinygltf INTERFACE quokka_stb nlohmann_json::nlohmann_json)

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
