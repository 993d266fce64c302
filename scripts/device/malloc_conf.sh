#!/usr/bin/env bash
# Device probe, not CI: the steady frames after placing the 10^6 grid under jemalloc settings (MALLOC_CONF adds to the
# CLI's compiled-in "thp:always,metadata_thp:auto"), and one-object frames of bench update — whether the stall of the
# first frames after placement is jemalloc purging the placement's freed memory on the frame path.
#   there: bash scripts/device/malloc_conf.sh [CONF...]   (default: the CLI's own, background_thread:true,
#          dirty_decay_ms:-1)
set -uo pipefail
out=${OUT:-/tmp/malloc_conf}
mkdir -p "$out"
confs=("$@")
[ ${#confs[@]} = 0 ] && confs=("" "background_thread:true" "dirty_decay_ms:-1,muzzy_decay_ms:-1")
for conf in "${confs[@]}"; do
  tag=${conf:-default}; tag=${tag//[:,]/_}
  MALLOC_CONF=$conf QUOKKA_VALIDATION=0 timeout 150 .devcarry/run.sh quokka render --scene grid --objects 1000000 \
    --frames 6 --samples 1 --json --out "$out/grid.png" > "$out/frames_$tag.json" 2> "$out/frames_$tag.err"
  echo "== MALLOC_CONF='$conf': rc=$?"
  python3 scripts/device/frames.py "$out/frames_$tag.json"
  MALLOC_CONF=$conf QUOKKA_VALIDATION=0 timeout 100 .devcarry/run.sh quokka bench update --objects 1000000 --k 1 \
    --reps 9 > "$out/update_$tag.txt" 2>&1
  grep -E "placement|^  (add|remove|readd|edit) |teardown" "$out/update_$tag.txt"
done
