#!/bin/sh
# dspreload stats: one row per process file, and the totals.
cmd=$1 prog=$2
fail() { echo "FAIL: $*"; exit 1; }
dir=$(mktemp -d)
for i in 1 2 3; do RANK=$((i - 1)) "$cmd" --stats-file "$dir/s.%p.json" -- "$prog" || fail "run $i"; done
n=$(ls "$dir" | wc -l); [ "$n" -eq 3 ] || fail "3 files expected, got $n"
out=$("$cmd" stats "$dir"/*.json) || fail "stats: $out"
[ "$(echo "$out" | grep -cE '^[0-9]+ ')" -eq 3 ] || fail "3 rows: $out"
# Each row names the rank its process was (the file's "rank").
for r in 0 1 2; do echo "$out" | grep -qE "^[0-9]+ +$r " || fail "no row of rank $r: $out"; done
# Each run of stats_exit has 1 pool hit and 3 misses and leaves 2 blocks live.
echo "$out" | grep -qE '^total +[0-9.]+ [KMG]iB +6 +3 +9 ' || fail "totals: $out"
# NUMA placement (issue 33): each node's figures, the files' together; none
# where no file has them (this machine's processes, of one node).
echo "$out" | grep -q '^NUMA' && fail "NUMA lines without placement: $out"
for pid in 7 8; do
  printf '{"version":"x","pid":%s,"numa_nodes":2,"numa_node0_pinned_bytes":1048576,"numa_node0_pooled_bytes":0,"numa_node0_fallbacks":0,"numa_node1_pinned_bytes":2097152,"numa_node1_pooled_bytes":1048576,"numa_node1_fallbacks":1}' $pid > "$dir/numa$pid.json"
done
out=$("$cmd" stats "$dir"/numa*.json) || fail "stats: $out"
echo "$out" | grep -qx 'NUMA node 0: 2 MiB pinned, 0 B pooled, 0 blocks elsewhere' || fail "node 0: $out"
echo "$out" | grep -qx 'NUMA node 1: 4 MiB pinned, 2 MiB pooled, 2 blocks elsewhere' || fail "node 1: $out"
rm -f "$dir"/numa*.json
echo '{"not":"ours"}' > "$dir/bad.json"
"$cmd" stats "$dir/bad.json" >/dev/null 2>&1; [ $? -eq 1 ] || fail "a foreign file must fail"
# Totals of no file read would read as a process that did nothing.
out=$("$cmd" stats "$dir/bad.json" 2>/dev/null)
echo "$out" | grep -q '^total' && fail "totals of no file read: $out"
echo "$out" | grep -q '^no stats file read' || fail "no word that nothing was read: $out"
rm -rf "$dir"
echo "PASS"
