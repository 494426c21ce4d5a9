#!/bin/sh
# warns.sh PROGRAM: the configuration messages of malloc hints (troubleshooting.md),
# each with the program still passing (hints off, or on, as the message says).
prog=$1
fail() { echo "FAIL: $*"; exit 1; }
out=$(DSP_MALLOC_MIN=1M DSP_MALLOC_FROM=' , ,' "$prog" 2>&1) || fail "with an empty DSP_MALLOC_FROM: $out"
echo "$out" | grep -q 'warning: DSP_MALLOC_FROM names no library; malloc hints are off' ||
  fail "no warning for an empty DSP_MALLOC_FROM: $out"
out=$(DSP_MALLOC_MIN=lots "$prog" 2>&1) || fail "with a bad DSP_MALLOC_MIN: $out"
echo "$out" | grep -q 'DSP_MALLOC_MIN=lots is not valid (accepted: off or bytes' ||
  fail "no warning for a bad DSP_MALLOC_MIN: $out"
out=$(DSP_MALLOC_MIN=off DSP_LOG=info "$prog" 2>&1) || fail "with DSP_MALLOC_MIN=off: $out"
echo "$out" | grep -q 'malloc hints on' && fail "hints on with DSP_MALLOC_MIN=off: $out"
echo PASS
