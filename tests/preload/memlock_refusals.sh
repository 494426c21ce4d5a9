#!/bin/sh
# Regression (issue 14): under an 8 MiB RLIMIT_MEMLOCK without CAP_IPC_LOCK
# (a container), the summary said "0 budget refusals" while hinted allocations
# were refused by that budget. Usage: memlock_refusals.sh LIB
lib=$1
fail() { echo "FAIL: $*"; exit 1; }
command -v python3 >/dev/null || fail "python3 missing (scripts/deps installs it)"
out=$(setpriv --inh-caps=-ipc_lock --bounding-set=-ipc_lock sh -c 'ulimit -l 8192 &&
  DSP_STATS=1 DSP_MALLOC_MIN=1M LD_PRELOAD="$0" python3 -c "
import ctypes
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
kept = [libc.malloc(1 << 20) for _ in range(40)]
"' "$lib" 2>&1) || fail "run: $out"
refused=$(echo "$out" | sed -n 's/.* \([0-9]*\) budget refusals.*/\1/p')
left=$(echo "$out" | sed -n 's/.* \([0-9]*\) left to the real allocator.*/\1/p')
[ -n "$refused" ] && [ -n "$left" ] || fail "no summary: $out"
[ "$left" -ge 30 ] || fail "only $left hinted allocations refused under 8 MiB: $out"
[ "$refused" -eq "$left" ] || fail "$left refused by the memlock budget, $refused counted: $out"
echo PASS
