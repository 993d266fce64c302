#!/usr/bin/env bash
# Device A/B of the adaptive benchmarks (not CI): the packed .devcarry/bin/qb_before and qb_after (two builds of
# quokka_bench_adaptive, -DQUOKKA_ASSERTS=OFF) alternated over 3 rounds, order flipped each round; the hot paths in
# both, then the newer benchmarks (deep chains, reduceByA) in `after` only. JSON per run under $OUT.
#   here:  cp old/bin/quokka_bench_adaptive /tmp/qb_before; cp new/bin/quokka_bench_adaptive /tmp/qb_after
#          ../shared/tools/device/pack.sh /tmp/qb_before /tmp/qb_after
#   there: bash scripts/device/ab_adaptive.sh
set -uo pipefail
out=${OUT:-/tmp/ab}; mkdir -p "$out"
hot='UpToDate|Transact|Mark|FanOut|PullUnchanged|SetReaderChanges/1000000'
for r in 1 2 3; do
  if [ $((r % 2)) = 1 ]; then order="before after"; else order="after before"; fi
  for b in $order; do
    .devcarry/run.sh qb_$b --benchmark_filter="$hot" --benchmark_min_time=0.3 --benchmark_format=json > "$out/${r}_$b.json" 2> "$out/${r}_$b.err"
    echo "round $r $b rc=$?"
  done
done
.devcarry/run.sh qb_after --benchmark_filter='ChainTopDown|ReduceByA' --benchmark_min_time=0.3 --benchmark_format=json > "$out/new.json" 2> "$out/new.err"
echo "new rc=$?"
lscpu | head -20 > "$out/lscpu.txt"
