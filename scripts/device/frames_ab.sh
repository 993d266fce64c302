#!/usr/bin/env bash
# Device A/B (not CI) of where frames spend their CPU time: `quokka render --json` with the packed binaries
# .devcarry/bin/quokka_<X> for each X in $BINS (default "O N"), alternated (the order flips every round), ROUNDS times;
# frames.py prints each run's frames.
#   here:  ../shared/tools/device/pack.sh /tmp/quokka_O /tmp/quokka_N
#   there: bash scripts/device/frames_ab.sh 2 --scene grid --objects 1000000 --frames 4 --samples 1
set -uo pipefail
rounds=${1:?usage: frames_ab.sh ROUNDS RENDER-ARGS...}
shift
out=${OUT:-/tmp/frames_ab}
mkdir -p "$out"
read -r -a bins <<< "${BINS:-O N}"
for r in $(seq 1 "$rounds"); do
  order=("${bins[@]}")
  [ $((r % 2)) = 0 ] && order=($(printf '%s\n' "${bins[@]}" | tac))
  for b in "${order[@]}"; do
    QUOKKA_VALIDATION=0 timeout 200 .devcarry/run.sh "quokka_$b" render "$@" --json --out "$out/$b.png" \
      > "$out/${r}_$b.json" 2> "$out/${r}_$b.err"
    echo "== round $r, $b: rc=$?"
    python3 scripts/device/frames.py "$out/${r}_$b.json" || tail -3 "$out/${r}_$b.err"
  done
done
