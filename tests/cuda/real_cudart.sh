#!/bin/sh
# With the real libcudart and no driver, every call returns an error (35): the
# shim must return exactly the same, call for call, and leave no trace.
prog=$1 preload=$2
plain=$("$prog") || { echo "FAIL: the program failed without the shim"; exit 1; }
shim=$(LD_PRELOAD=$preload DSP_STATS=1 "$prog" 2>/tmp/dsp-real-cudart.$$) || { echo "FAIL: with the shim"; exit 1; }
if [ "$plain" != "$shim" ]; then
  echo "FAIL: results differ"; echo "without:"; echo "$plain"; echo "with:"; echo "$shim"; exit 1
fi
echo "$plain" | grep -q '^cudaHostAlloc 35$' || { echo "FAIL: expected error 35 without a driver: $plain"; exit 1; }
grep -q 'stats: pinned 0 B now' /tmp/dsp-real-cudart.$$ || { echo "FAIL: something stayed pinned"; cat /tmp/dsp-real-cudart.$$; exit 1; }
rm -f /tmp/dsp-real-cudart.$$
echo "$plain" | head -3
echo "PASS: identical results with and without the shim"
