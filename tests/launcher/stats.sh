#!/bin/sh
# dspreload stats: one row per process file, and the totals.
cmd=$1 prog=$2
fail() { echo "FAIL: $*"; exit 1; }
dir=$(mktemp -d)
for i in 1 2 3; do "$cmd" --stats-file "$dir/s.%p.json" -- "$prog" || fail "run $i"; done
n=$(ls "$dir" | wc -l); [ "$n" -eq 3 ] || fail "3 files expected, got $n"
out=$("$cmd" stats "$dir"/*.json) || fail "stats: $out"
[ "$(echo "$out" | grep -cE '^[0-9]+ ')" -eq 3 ] || fail "3 rows: $out"
# Each run of stats_exit has 1 pool hit and 3 misses and leaves 2 blocks live.
echo "$out" | grep -qE '^total +[0-9.]+ [KMG]iB +6 +3 +9 ' || fail "totals: $out"
echo '{"not":"ours"}' > "$dir/bad.json"
"$cmd" stats "$dir/bad.json" >/dev/null 2>&1; [ $? -eq 1 ] || fail "a foreign file must fail"
# Totals of no file read would read as a process that did nothing.
out=$("$cmd" stats "$dir/bad.json" 2>/dev/null)
echo "$out" | grep -q '^total' && fail "totals of no file read: $out"
echo "$out" | grep -q '^no stats file read' || fail "no word that nothing was read: $out"
rm -rf "$dir"
echo "PASS"
