#!/bin/sh
# same_output.sh LIB -- PROGRAM ARGS...: runs PROGRAM without the shim, then
# under it with malloc hints on at a low threshold, and fails unless both runs
# exit 0 with identical output, and the shim really hinted allocations.
lib=$1
shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$@" >"$tmp/plain" 2>&1 || { echo "FAIL: without the shim:"; cat "$tmp/plain"; exit 1; }
LD_PRELOAD=$lib DSP_MALLOC_MIN=${MIN:-16K} DSP_STATS_FILE="$tmp/stats.%p.json" "$@" >"$tmp/shim" 2>&1 ||
  { echo "FAIL: under the shim:"; cat "$tmp/shim"; exit 1; }
if ! cmp -s "$tmp/plain" "$tmp/shim"; then
  echo "FAIL: the output differs"; diff "$tmp/plain" "$tmp/shim" | head -20; exit 1
fi
# One file a process (%p): children (DataLoader workers, a forkserver that
# outlives its parent by a moment) must not overwrite the parent's, or be
# read half-written. Hints counted over every process.
hinted=$(cat "$tmp"/stats.*.json 2>/dev/null | sed -n 's/.*"malloc_hinted": *\([0-9]*\).*/\1/p' |
  awk '{ n += $1 } END { print n + 0 }')
if [ "$hinted" -eq 0 ]; then
  echo "FAIL: nothing was hinted (stats: $(cat "$tmp"/stats.*.json 2>/dev/null))"; exit 1
fi
echo "same output; $hinted allocations hinted: $(cat "$tmp/plain" | head -c 200)"
