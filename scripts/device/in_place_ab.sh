#!/usr/bin/env bash
# Device A/B (not CI) of the heap's writes in place with one packed binary (.devcarry/bin/quokka_${BIN:-N}), alternated
# over `--write-in-place on|off`, ROUNDS times, the order flipping every round: bench update's one-object frames (k = 1,
# each op, blocking and spinning waits), then bench draw's GPU time of the indirect strategy (auto's choice on NVIDIA;
# the chunks in mappable or in plain device-local memory), then the first frames of a grid render.
#   here:  ../shared/tools/device/pack.sh /tmp/quokka_N
#   there: bash scripts/device/in_place_ab.sh 2 1000000     (START=2 numbers the rounds from 2: one round per call)
set -uo pipefail
rounds=${1:?usage: in_place_ab.sh ROUNDS OBJECTS}
objects=${2:?usage: in_place_ab.sh ROUNDS OBJECTS}
out=${OUT:-/tmp/in_place_ab}
mkdir -p "$out"
bin=quokka_${BIN:-N}
run() { QUOKKA_VALIDATION=0 timeout 300 .devcarry/run.sh "$bin" "$@"; }
start=${START:-1}
for r in $(seq "$start" $((start + rounds - 1))); do
  order=(on off)
  [ $((r % 2)) = 0 ] && order=(off on)
  for w in "${order[@]}"; do
    for wait in block spin; do
      echo "== round $r, --write-in-place $w, bench update k = 1, --wait $wait:"
      run bench update --objects "$objects" --k 1 --reps 15 --wait "$wait" --write-in-place "$w" 2>&1 |
        grep -E "placement:|^  (add|remove|readd|edit) |    (add|remove|readd|edit):"
    done
    echo "== round $r, --write-in-place $w, bench draw indirect:"
    run bench draw --objects "$objects" --draw indirect --write-in-place "$w" 2>&1 | grep -E "^  (heap|baked)"
    json="$out/grid_${r}_$w.json"
    run render --scene grid --objects "$objects" --path heap --frames 4 --samples 1 --json --write-in-place "$w" \
      --out "$out/grid_$w.png" > "$json" 2> "$out/grid_${r}_$w.err"
    echo -n "== round $r, --write-in-place $w, grid (rc=$?): "
    python3 -c "
import json, sys
frames = json.load(open(sys.argv[1]))['per_frame']
print('CPU update per frame, ms:', [round(f['cpu_update_ms'], 3) for f in frames])" "$json" || tail -3 "$out/grid_${r}_$w.err"
  done
done
