#!/bin/sh
# mpirun.sh DSPRELOAD MPIRUN PROG LIB: two ranks of rank_pin (MPI) under Open MPI's
# mpirun, as docs/deployment.md starts them: dspreload in the command each rank
# runs. The checksums of what the ranks swapped must be those of the run
# without the shim; each rank writes one stats file showing its two pinned
# 2 MiB blocks, under one node cap; and, while both hold them, each rank's
# statistics count both ranks in one node ledger. Then the other way the
# document gives: the variables exported and forwarded with mpirun -x.
dsp=$1 mpirun=$2 prog=$3 lib=$4
. "$(dirname "$0")/common.sh"
cap=536870912 # 512M
# As root Open MPI wants --allow-run-as-root; --oversubscribe lets 2 ranks
# run on fewer free slots than that (a shared 2-core machine, a container).
set -- "$mpirun" --oversubscribe -np 2
# Shared memory without cross-memory attach: process_vm_readv between sibling
# ranks is refused where Yama's ptrace_scope is 1 or ptrace is not granted
# (containers), which Open MPI reports as a failed read, not as a fallback.
export OMPI_MCA_btl_vader_single_copy_mechanism=none
[ "$(id -u)" -eq 0 ] && set -- "$@" --allow-run-as-root
"$@" "$prog" >"$tmp/plain.out" 2>&1 || fail "mpirun without the shim: exit $?"
"$@" "$dsp" --stats-file "$tmp/stats/dsp.%p.json" DSP_NODE_KEY="$key" DSP_NODE_MAX_PINNED=512M \
  DSP_LOG=warn -- "$prog" >"$tmp/shim.out" 2>&1 || fail "mpirun under dspreload: exit $?"
a=$(grep '^rank ' "$tmp/plain.out" | sort) b=$(grep '^rank ' "$tmp/shim.out" | sort)
[ "$(echo "$a" | grep -c 'checksum')" -eq 2 ] || fail "want 2 checksums without the shim: $a"
echo "$a" | grep -q '^rank 0 checksum [0-9a-f]* from rank 1$' || fail "rank 0 got nothing from rank 1: $a"
[ "$a" = "$b" ] || fail "checksums differ under the shim: $(echo "$a" | tr '\n' ' ') / $(echo "$b" | tr '\n' ' ')"
grep -q '^node ' "$tmp/plain.out" && fail "the shim answered without being preloaded: $(cat "$tmp/plain.out")"
files=$(check_ranks "$tmp/shim.out" 2) || { echo "$files"; exit 1; }
for f in $files; do
  [ "$(num "$f" pool_misses)" -ge 2 ] && [ "$(num "$f" pinned_new_bytes)" -ge 4194304 ] ||
    fail "a rank did not pin its two 2 MiB blocks: $(cat "$f")"
  [ "$(num "$f" fallbacks)" = 0 ] && [ "$(num "$f" pin_failures)" = 0 ] || fail "a pin failed: $(cat "$f")"
  [ "$(num "$f" node_cap_bytes)" = $cap ] || fail "a rank is not under the node cap 512M: $(cat "$f")"
done
# What each rank's statistics said between the barriers: one ledger, both
# ranks in it, their 8 MiB together, under the one cap.
for r in 0 1; do
  grep -q "^node rank $r users 2 pinned 8388608 cap $cap$" "$tmp/shim.out" ||
    fail "rank $r does not see both ranks' 8 MiB in one ledger capped at 512M: $(grep '^node' "$tmp/shim.out")"
done
# mpirun -x: the variables forwarded, mpirun itself under the shim too (it
# pins nothing, so it writes no file).
rm -f "$tmp"/stats/*
LD_PRELOAD=$lib DSP_STATS_FILE="$tmp/stats/dsp.%p.json" DSP_NODE_KEY="$key" DSP_NODE_MAX_PINNED=512M \
  DSP_LOG=warn "$@" -x LD_PRELOAD -x DSP_STATS_FILE -x DSP_NODE_KEY -x DSP_NODE_MAX_PINNED -x DSP_LOG \
  "$prog" >"$tmp/x.out" 2>&1 || fail "mpirun -x LD_PRELOAD: exit $?"
[ "$(grep '^rank ' "$tmp/x.out" | sort)" = "$a" ] || fail "mpirun -x: checksums differ: $(grep '^rank ' "$tmp/x.out")"
check_ranks "$tmp/x.out" 2 >/dev/null || fail "mpirun -x: not one stats file per rank: $(ls "$tmp/stats")"
for r in 0 1; do
  grep -q "^node rank $r users 2 pinned 8388608 cap $cap$" "$tmp/x.out" ||
    fail "mpirun -x: rank $r does not see both ranks in one ledger: $(grep '^node' "$tmp/x.out")"
done
echo "same checksums; $(grep '^node' "$tmp/shim.out" | tr '\n' ';')"
