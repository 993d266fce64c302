#!/usr/bin/env bash
# Device A/B (not CI) of the heap's bulk frames with one packed binary (.devcarry/bin/quokka_${BIN:-N}): the first frame
# of a grid render and bench update's placement, alternated over `--convert-threads` values ($THREADS, default "0 4";
# 0 = everything on the frame's thread), ROUNDS times, the order flipping every round.
#   here:  ../shared/tools/device/pack.sh /tmp/quokka_N
#   there: bash scripts/device/bulk_ab.sh 2 1000000
set -uo pipefail
rounds=${1:?usage: bulk_ab.sh ROUNDS OBJECTS}
objects=${2:?usage: bulk_ab.sh ROUNDS OBJECTS}
out=${OUT:-/tmp/bulk_ab}
mkdir -p "$out"
read -r -a threads <<< "${THREADS:-0 4}"
bin=quokka_${BIN:-N}
for r in $(seq 1 "$rounds"); do
  order=("${threads[@]}")
  [ $((r % 2)) = 0 ] && order=($(printf '%s\n' "${threads[@]}" | tac))
  for t in "${order[@]}"; do
    json="$out/grid_${r}_$t.json"
    QUOKKA_VALIDATION=0 timeout 300 .devcarry/run.sh "$bin" render --scene grid --objects "$objects" --path heap \
      --frames 1 --samples 1 --json --convert-threads "$t" --out "$out/grid_$t.png" > "$json" 2> "$out/grid_${r}_$t.err"
    echo -n "== round $r, grid, --convert-threads $t (rc=$?): "
    python3 -c "
import json, sys
f = json.load(open(sys.argv[1]))['per_frame'][0]
steps = {k: round(v) for k, v in f['heap_phases_ms'].items() if not isinstance(v, dict)}
print('first frame', round(f['cpu_update_ms']), 'ms CPU update; steps', steps)" "$json" || tail -3 "$out/grid_${r}_$t.err"
    echo "== round $r, bench update, --convert-threads $t:"
    QUOKKA_VALIDATION=0 timeout 300 .devcarry/run.sh "$bin" bench update --objects "$objects" --op edit --k 1 --reps 1 \
      --convert-threads "$t" 2>&1 | grep -E "placement:|by step"
  done
done
