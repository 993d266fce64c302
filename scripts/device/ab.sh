#!/usr/bin/env bash
# Device A/B (not CI): runs the packed binaries .devcarry/bin/quokka_<X> for each X in $BINS (default "O N"),
# alternated (the order flips every round: the H200 host's clock drifts between processes), ROUNDS times, with the
# given quokka arguments; each run's output goes to $OUT/<round>_<X>.txt and its `bench update` rows are printed on one
# line (op k update-ms us/object heap-ms upload-ms … kcycles/object). A name X:VAR=value runs quokka_X with that
# environment (e.g. "N" "N:MALLOC_CONF=dirty_decay_ms:-1").
#   here:  ../shared/tools/device/pack.sh /tmp/quokka_O /tmp/quokka_N      (binaries built alike, e.g. in build-fp)
#   there: BINS="O N" bash scripts/device/ab.sh 3 bench update --objects 1000000 --k 100 10000 --op add remove --reps 5
set -uo pipefail
rounds=${1:?usage: ab.sh ROUNDS QUOKKA-ARGS...}
shift
out=${OUT:-/tmp/ab}
mkdir -p "$out"
read -r -a bins <<< "${BINS:-O N}"
for r in $(seq 1 "$rounds"); do
  if [ $((r % 2)) = 1 ]; then order=("${bins[@]}"); else order=(); for ((i = ${#bins[@]} - 1; i >= 0; i--)); do order+=("${bins[i]}"); done; fi
  for spec in "${order[@]}"; do
    b=${spec%%:*}
    env=()
    tag=$b
    if [ "$spec" != "$b" ]; then env=("${spec#*:}"); tag=${b}E; fi
    env QUOKKA_VALIDATION=0 "${env[@]}" .devcarry/run.sh "quokka_$b" "$@" > "$out/${r}_$tag.txt" 2>&1
    echo "round $r $tag: $(grep -E '^  (add|remove|readd|edit) ' "$out/${r}_$tag.txt" | tr -s ' ' | cut -d' ' -f2-7,10 | tr '\n' '|')"
  done
done
