# perf_under.awk — folds `perf script -F ip,sym` call chains under one function (device profiling, not CI).
# Usage (on the GPU machine): perf script -i p.data -F ip,sym | awk -v ROOT='HeapScene::update(\\(\\))?$' -v OUTDIR=$OUT -f perf_under.awk
# Writes OUTDIR/child.txt (ROOT's callees), gc.txt (their callees) and leaf.txt (sampled functions), as % of ROOT's samples.
function flush_sample(   i, k, c) {
  if (n == 0) return
  total++; k = -1
  for (i = 0; i < n; i++) if (f[i] ~ ROOT) { k = i; break }
  if (k >= 0) {
    under++
    c = (k > 0) ? f[k-1] : "[self]"
    child[c]++
    if (k > 1) gc[c " > " f[k-2]]++
    leaf[f[0]]++
  }
  n = 0
}
/^[ \t]*$/ { flush_sample(); next }
{ s = $0; sub(/^[ \t]+[0-9a-f]+ /, "", s); sub(/\+0x[0-9a-f]+$/, "", s); f[n++] = substr(s, 1, 140) }
END {
  flush_sample()
  printf "samples %d, under root %d\n", total, under
  for (c in child) printf "C %6.2f%% %s\n", 100 * child[c] / under, c > OUTDIR "/child.txt"
  for (c in gc) printf "G %6.2f%% %s\n", 100 * gc[c] / under, c > OUTDIR "/gc.txt"
  for (c in leaf) printf "L %6.2f%% %s\n", 100 * leaf[c] / under, c > OUTDIR "/leaf.txt"
}
