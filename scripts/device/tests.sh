#!/usr/bin/env bash
# Device check (not CI): runs every test binary of a build on the GPU machine (QUOKKA_DEVICE=gpu), several at a time,
# with the Khronos validation layer of this machine carried along (QUOKKA_VALIDATION=sync unless set otherwise), so a
# validation error fails a test there as it does on lavapipe. The binaries are too large to carry as they are, so they
# travel stripped and compressed:
#   scripts/device/tests.sh --pack build/bin/quokka [more files for pack.sh]
#                                                        (here: strips and packs build/bin's tests and the executable)
#   scripts/device/tests.sh                              (there, via the device tool's run with carry .devcarry)
# Prints one line per binary (exit status, gtest's summary, failed tests) and exits non-zero when any binary failed.
# Logs go to $OUT/tests/ when OUT is set.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
root=$PWD

if [ "${1:-}" = "--pack" ]; then
  shift
  exe=${1:-build/bin/quokka}
  [ $# -gt 0 ] && shift
  bin=$(dirname "$exe")
  tmp=$(mktemp -d)
  for t in "$bin"/quokka_*_tests; do strip --strip-debug -o "$tmp/$(basename "$t")" "$t"; done
  strip --strip-debug -o "$tmp/quokka" "$exe"
  # The CLI suite runs quokka at the path its build gave it; the README test reads the source tree it was built from.
  echo "$(cd "$bin" && pwd)/quokka" > "$tmp/cli_path"
  echo "$root" > "$tmp/source_dir"
  layer=/usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json
  if [ -f "$layer" ]; then
    mkdir -p "$tmp/layers"
    sed 's|"library_path": *"[^"]*"|"library_path": "./libVkLayer_khronos_validation.so"|' "$layer" > "$tmp/layers/$(basename "$layer")"
    strip --strip-debug -o "$tmp/layers/libVkLayer_khronos_validation.so" /usr/lib/x86_64-linux-gnu/libVkLayer_khronos_validation.so
  fi
  packed=$(mktemp -d)
  tar -C "$tmp" -cf - . | xz -T0 -6 > "$packed/tests.tar.xz"
  ../shared/tools/device/pack.sh "$tmp/quokka" "$packed/tests.tar.xz" "$@"
  rm -rf "$tmp" "$packed"
  exit 0
fi

work=$(mktemp -d)
tar -C "$work" -xJf .devcarry/files/tests.tar.xz || { echo "no .devcarry/files/tests.tar.xz: pack with --pack"; exit 2; }
cp "$work"/quokka_*_tests .devcarry/bin/
# Recreate the build's paths: the source tree (README test) and the quokka executable (CLI suite).
src=$(cat "$work/source_dir")
[ -e "$src/README.md" ] || { mkdir -p "$(dirname "$src")"; ln -sfn "$root" "$src"; }
cli=$(cat "$work/cli_path")
mkdir -p "$(dirname "$cli")"
[ -x "$cli" ] || ln -sf "$root/.devcarry/bin/quokka" "$cli"

logs=${OUT:-$work}/tests
mkdir -p "$logs"
export QUOKKA_VALIDATION=${QUOKKA_VALIDATION:-sync}
if [ -d "$work/layers" ]; then
  export VK_LAYER_PATH=$work/layers
else
  echo "no validation layer packed: running without it"
  export QUOKKA_VALIDATION=0
fi
# run.sh unpacks the Vulkan loader on a fresh machine: once, before the binaries start side by side.
.devcarry/run.sh quokka info > "$logs/info.txt" 2>&1 || { echo "quokka info failed:"; tail -n 5 "$logs/info.txt"; }
for t in "$work"/quokka_*_tests; do
  name=$(basename "$t")
  (timeout 540 .devcarry/run.sh "$name" > "$logs/$name.log" 2>&1; echo $? > "$logs/$name.rc") &
done
wait
status=0
for t in "$work"/quokka_*_tests; do
  name=$(basename "$t")
  rc=$(cat "$logs/$name.rc")
  [ "$rc" = 0 ] || status=1
  echo "rc=$rc $name :: $(grep -E '^\[  PASSED  \]|tests? ran|SKIPPED  \] [0-9]' "$logs/$name.log" | tr '\n' ' ')"
  grep -E '^\[  FAILED  \]' "$logs/$name.log" | sort -u | head -20
done
exit $status
