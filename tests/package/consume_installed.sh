#!/usr/bin/env bash
# Installs quokka from a finished build into a fresh prefix and uses it as an outside project would:
#  1. every installed public header compiles on its own (only the package's include directories and definitions);
#  2. examples/ configures with find_package(quokka) against that prefix, builds, and its programs run on the device
#     QUOKKA_DEVICE picks: hello_triangle's centre pixel is the blue it sets last; gltf_to_png renders the marker
#     model (counts checked) and writes its PNG.
#   consume_installed.sh BUILD_DIR SOURCE_DIR WORK_DIR
set -euo pipefail
build=$1 src=$2 work=$3
rm -rf "$work"
mkdir -p "$work"
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" >"$work/install.log"
[ -f "$prefix/lib/cmake/quokka/quokkaConfig.cmake" ] || { echo "no quokkaConfig.cmake installed" >&2; exit 1; }
[ -x "$prefix/bin/quokka" ] || { echo "the quokka tool was not installed" >&2; exit 1; }

# 1. Self-contained headers: one translation unit per installed header, compiled against quokka::quokka.
hdr=$work/headers
mkdir -p "$hdr/src"
count=0
while IFS= read -r h; do
  rel=${h#"$prefix/include/"}
  echo "#include <$rel>" >"$hdr/src/$(echo "$rel" | tr '/.' '__').cpp"
  count=$((count + 1))
done < <(find "$prefix/include/quokka" -name '*.hpp' | sort)
[ "$count" -gt 40 ] || { echo "only $count headers installed" >&2; exit 1; }
cat >"$hdr/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.25)
project(quokka_header_check LANGUAGES CXX)
set(CMAKE_CXX_STANDARD 20)
find_package(quokka 0.1 REQUIRED)
file(GLOB sources ${CMAKE_CURRENT_SOURCE_DIR}/src/*.cpp)
add_library(headers OBJECT ${sources})
target_link_libraries(headers PRIVATE quokka::quokka)
CMAKE
cmake -S "$hdr" -B "$hdr/build" -DCMAKE_PREFIX_PATH="$prefix" >"$work/headers_configure.log"
cmake --build "$hdr/build" -j "${QUOKKA_JOBS:-2}" >"$work/headers_build.log" || { cat "$work/headers_build.log" >&2; exit 1; }
echo "$count installed headers compile on their own"

# 2. The examples, built against the prefix only.
cmake -S "$src/examples" -B "$work/examples" -DCMAKE_PREFIX_PATH="$prefix" >"$work/examples_configure.log"
cmake --build "$work/examples" -j "${QUOKKA_JOBS:-2}" >"$work/examples_build.log" || { cat "$work/examples_build.log" >&2; exit 1; }
out=$("$work/examples/hello_triangle" "$work/hello.png")
echo "$out"
[[ $out == *"centre pixel 0 102 255 255"* ]] || { echo "hello_triangle: unexpected centre pixel" >&2; exit 1; }
[ -s "$work/hello.png" ] || { echo "hello_triangle wrote no PNG" >&2; exit 1; }
out=$("$work/examples/gltf_to_png" "$src/examples/data/marker.gltf" "$work/marker.png" 160 120)
echo "$out"
[[ $out == *"3 objects, 2 triangles, 4 lines, 4 points, framed camera"* ]] || { echo "gltf_to_png: unexpected counts" >&2; exit 1; }
[ -s "$work/marker.png" ] || { echo "gltf_to_png wrote no PNG" >&2; exit 1; }
# Bad input is an error, not an empty image.
if "$work/examples/gltf_to_png" "$src/examples/CMakeLists.txt" "$work/bad.png" 2>"$work/bad.err"; then
  echo "gltf_to_png accepted a CMakeLists.txt as glTF" >&2; exit 1
fi
[ ! -e "$work/bad.png" ] || { echo "gltf_to_png wrote a PNG for bad input" >&2; exit 1; }
rm -rf "$prefix" "$hdr/build" "$work/examples"
echo "package consumer: ok"
