#!/bin/sh
# torchrun.sh DSPRELOAD PYTHON SCRIPT: two ranks of a CPU DDP training (gloo)
# under torchrun, as docs/deployment.md starts them: dspreload in front of the
# launcher, malloc hints at 1M, a node cap. The losses and parameters must be
# those of the run without the shim; each rank writes one stats file showing
# hinted allocations; the launcher, which pins nothing, writes none; while
# both ranks hold their pins, `dspreload stats --node` lists both, under the cap.
dsp=$1 py=$2 script=$3
# Debian's python3-torch: scripts/deps installs it when missing; a test may
# skip only when it cannot be installed, and says so (issue 31).
if ! "$py" -c 'import torch.distributed.run' 2>/dev/null; then
  bash "$(dirname "$0")/../../scripts/deps" >&2 || true
  "$py" -c 'import torch.distributed.run' 2>/dev/null ||
    { echo "SKIP: Debian package python3-torch missing and not installable (scripts/deps)"; exit 77; }
fi
. "$(dirname "$0")/common.sh"
cap=536870912 # 512M
# Debian 12's torch 1.13 on Python 3.11 cannot parse its own --redirects and
# --tee defaults ("0": enum.IntFlag no longer iterates a zero member), so both
# are given; per-rank output then lands in --log_dir too. --nproc_per_node:
# 1.13 has no --nproc-per-node spelling.
run() {
  "$@" "$py" -m torch.distributed.run --standalone --nproc_per_node 2 --redirects 1 --tee 1 \
    --log_dir "$tmp/logs.$(date +%s%N)" "$script"
}
run >"$tmp/plain.out" 2>&1 || fail "torchrun without the shim: exit $?"
NODE_QUERY=$dsp run "$dsp" --stats-file "$tmp/stats/dsp.%p.json" --malloc-min 1M \
  DSP_NODE_KEY="$key" DSP_NODE_MAX_PINNED=512M DSP_LOG=warn -- >"$tmp/shim.out" 2>&1 ||
  fail "torchrun under dspreload: exit $?"
for r in 0 1; do
  grep -q "^\[default$r\]:loss rank $r step 5 " "$tmp/plain.out" || fail "rank $r did not train"
  a=$(grep "^\[default$r\]:\(loss\|params\) rank $r " "$tmp/plain.out")
  b=$(grep "^\[default$r\]:\(loss\|params\) rank $r " "$tmp/shim.out")
  [ "$a" = "$b" ] || fail "rank $r: losses differ under the shim: $(echo "$a" | tr '\n' ' ') / $(echo "$b" | tr '\n' ' ')"
done
files=$(check_ranks "$tmp/shim.out" 2) || { echo "$files"; exit 1; }
r=0
for f in $files; do
  [ "$(num "$f" rank)" = "$r" ] || fail "$f: want \"rank\":$r (RANK): $(cat "$f")"
  [ "$(num "$f" malloc_hinted)" -gt 0 ] || fail "rank $r hinted nothing: $(cat "$f")"
  [ "$(num "$f" pinned_bytes_peak)" -ge 1048576 ] || fail "rank $r pinned under 1 MiB: $(cat "$f")"
  [ "$(num "$f" node_cap_bytes)" = $cap ] || fail "rank $r: not under the node cap 512M: $(cat "$f")"
  [ "$(num "$f" node_pinned_bytes)" -le $cap ] || fail "rank $r saw the node over its cap: $(cat "$f")"
  r=$((r + 1))
done
# The table docs/deployment.md shows after the job: one row a rank, the totals.
summary=$("$dsp" stats "$tmp"/stats/*.json) || fail "dspreload stats: exit $?"
for f in $files; do
  echo "$summary" | grep -q "^$(num "$f" pid) " || fail "dspreload stats has no row of $f: $summary"
done
[ "$(echo "$summary" | grep -c '^[0-9]')" -eq 2 ] && echo "$summary" | grep -q '^total ' ||
  fail "dspreload stats: want 2 rows and a total: $summary"
# The node table rank 0 printed between its barriers.
table=$(sed -n 's/^\[default0\]:node //p' "$tmp/shim.out")
for r in 0 1; do
  pid=$(sed -n "s/^\[default$r\]:pid rank $r //p" "$tmp/shim.out")
  echo "$table" | grep -q "^$pid  *$r  *$r .* live$" || fail "stats --node has no live row of rank $r (pid $pid): $table"
done
[ "$(echo "$table" | grep -c ' live$')" -eq 2 ] || fail "stats --node: want the 2 ranks alone: $table"
echo "$table" | grep -q "^ledger .*(key:$key): cap 512 MiB, 2 processes" || fail "stats --node: not one ledger of 2 under 512 MiB: $table"
echo "$table" | grep -q '^total .* under the cap of 512 MiB$' || fail "stats --node: no total against the cap: $table"
# Once the job is over the ledger is idle: no rank, no cap until the next pin.
after=$("$dsp" stats --node --key "$key")
echo "$after" | grep -q "^ledger .*(key:$key): no process uses it" &&
  echo "$after" | grep -q '^total .* 0 B .* 0 B  *0 no cap yet$' || fail "stats --node after the job: not idle: $after"
# Something pinned: the state column above already held the total to the cap.
echo "$table" | grep -q '^total  *0 B ' && fail "stats --node: nothing pinned: $table"
echo "same losses; ranks' stats: $(for f in $files; do echo "$(num "$f" malloc_hinted) hinted, peak $(num "$f" pinned_bytes_peak);"; done)"
echo "$table"
