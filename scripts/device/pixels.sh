#!/usr/bin/env bash
# Device check (not CI): renders the built-in scenes on every path and strategy and compares the PNGs byte for byte,
# with glibc's heap checks on. Run on the GPU machine after packing the quokka executable:
#   ../shared/tools/device/pack.sh build/bin/quokka     (here)
#   scripts/device/pixels.sh                             (there, via the device tool's run with carry .devcarry)
# Prints one line per render (exit status and last output line) and one per comparison; exits non-zero when a
# render failed or a heap image differs from the classic one.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
export MALLOC_CHECK_=3 MALLOC_PERTURB_=165
out=$(mktemp -d)
status=0
render() {
  local log rc
  log=$(timeout 120 .devcarry/run.sh quokka render "$@" 2>&1)
  rc=$?
  echo "rc=$rc render $* :: $(echo "$log" | tail -1 | cut -c1-140)"
  [ $rc -eq 0 ] || status=1
}
same() {
  if cmp -s "$1" "$2"; then echo "same: $3"; else echo "DIFFERS: $3"; status=1; fi
}
for s in grid city; do
  render --scene $s --path classic --out "$out/$s-classic.png"
  for d in indirect megacall auto; do
    render --scene $s --path heap --draw $d --out "$out/$s-$d.png"
    same "$out/$s-classic.png" "$out/$s-$d.png" "$s heap $d vs classic"
  done
  render --scene $s --path heap --max-chunk-bytes 1048576 --out "$out/$s-paged.png"
  same "$out/$s-classic.png" "$out/$s-paged.png" "$s heap paged (1 MiB chunks) vs classic"
done
render --scene city --samples 4 --path classic --out "$out/c4-classic.png"
render --scene city --samples 4 --path heap --out "$out/c4-heap.png"
same "$out/c4-classic.png" "$out/c4-heap.png" "city 4x MSAA heap vs classic"
render --scene meshlets --meshlet-path vertex --out "$out/m-vertex.png"
render --scene meshlets --meshlet-path mesh --out "$out/m-mesh.png"
same "$out/m-vertex.png" "$out/m-mesh.png" "meshlets mesh shaders vs vertex pulling"
[ -n "${OUT:-}" ] && cp "$out"/city-*.png "$OUT"/ 2>/dev/null
exit $status
