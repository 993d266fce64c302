#!/usr/bin/env bash
# Device campaign for load and scale (#41) and textures at scale (#40), not CI: one call of the device tool.
#   here:  scripts/build && ../shared/tools/device/pack.sh build/bin/quokka build/bin/quokka_heap_tests \
#            build/bin/quokka_atlas_gpu_tests build/bin/quokka_gpu_tests && strip .devcarry/bin/*
#   there: bash scripts/device/scale.sh [PART...]   (parts: thp textures draw update frames charts; default: the first
#          four, in that order)
# Each part's full output goes to $OUT/<part>.txt (JSON where the benchmark has it); the summary lines are printed.
# Parts stop at their own time limits so that one slow part leaves time for the rest of a 10-minute call.
set -uo pipefail
out=${OUT:-/tmp/scale}
mkdir -p "$out"
parts=("$@")
[ ${#parts[@]} = 0 ] && parts=(thp textures draw update)
run() { QUOKKA_VALIDATION=0 timeout "$1" .devcarry/run.sh "${@:2}"; }
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>/dev/null
lscpu | grep -E "Model name|^CPU\(s\)" | head -2
echo "THP: $(cat /sys/kernel/mm/transparent_hugepage/enabled)"
for part in "${parts[@]}"; do
  case "$part" in
    thp) # placement of 10^6 with jemalloc's huge pages (the CLI's default) and without: which default the host wants
      for conf in "thp:always,metadata_thp:auto" "thp:default,metadata_thp:disabled"; do
        echo "== bench update, MALLOC_CONF=$conf"
        MALLOC_CONF=$conf run 120 quokka bench update --objects 1000000 --op add edit --k 1 100 --reps 5 \
          > "$out/thp_${conf%%,*}.txt" 2>&1
        grep -E "placement|by step|host memory|^  (add|edit) |teardown" "$out/thp_${conf%%,*}.txt"
      done ;;
    textures) # #40: draw calls and GPU time against one shared texture, 10^4/10^5 objects x 10/10^3/10^4 textures
      run 200 quokka bench textures --objects 10000 100000 --reps 5 --json > "$out/textures.json" 2> "$out/textures.err"
      echo "bench textures rc=$?"; tail -3 "$out/textures.err"
      run 60 quokka_heap_tests --gtest_filter='HeapTexture*:HeapBindless*:*Textures*' > "$out/heaptex.txt" 2>&1
      grep -E "worst|OK|FAILED|PASSED" "$out/heaptex.txt" | head -20
      run 60 quokka_atlas_gpu_tests > "$out/atlas.txt" 2>&1; tail -2 "$out/atlas.txt"
      QUOKKA_REQUIRE_BINDLESS=1 run 60 quokka_gpu_tests --gtest_filter='Bindless*' > "$out/bindless.txt" 2>&1
      tail -2 "$out/bindless.txt" ;;
    draw) # auto against the best variant, interleaved, 10^3..10^6
      run 240 quokka bench draw --objects 1000 10000 100000 1000000 --reps 7 --json > "$out/draw.json" 2> "$out/draw.err"
      echo "bench draw rc=$?"; tail -3 "$out/draw.err" ;;
    update) # one-object frames and placement at 10^7
      run 120 quokka bench update --objects 1000000 --k 1 --reps 9 > "$out/update_k1.txt" 2>&1
      grep -E "placement|^  (add|remove|readd|edit) " "$out/update_k1.txt"
      run 240 quokka bench update --objects 10000000 --op edit --k 1 --reps 1 > "$out/update_1e7.txt" 2>&1
      grep -E "placement|by step|host memory|teardown|error" "$out/update_1e7.txt" ;;
    frames) # where the steady frames of the 10^6 grid spend their CPU time, at 4x MSAA and at one sample
      for samples in 4 1; do
        run 150 quokka render --scene grid --objects 1000000 --frames 8 --samples $samples --json \
          --out "$out/grid$samples.png" > "$out/frames$samples.json" 2> "$out/frames$samples.err"
        echo "== grid 10^6, $samples sample(s): rc=$?"
        python3 scripts/device/frames.py "$out/frames$samples.json"
      done ;;
    charts) # the README's charts: bench update and bench camera JSON, 10^3..10^6
      run 240 quokka bench update --objects 1000 10000 100000 1000000 --reps 5 --json > "$out/update.json" \
        2> "$out/update.err"
      echo "bench update rc=$?"; tail -2 "$out/update.err"
      run 240 quokka bench camera --objects 1000 10000 100000 1000000 --reps 5 --json > "$out/camera.json" \
        2> "$out/camera.err"
      echo "bench camera rc=$?"; tail -2 "$out/camera.err" ;;
    *) echo "unknown part $part"; exit 2 ;;
  esac
done
