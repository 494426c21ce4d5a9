#!/bin/sh
# Running a command: environment, LD_PRELOAD (ours first, the caller's kept),
# exit status and signals passed through, 126/127 when it cannot run.
cmd=$1 lib=$2
fail() { echo "FAIL: $*"; exit 1; }
other=$(ldd /bin/sh | awk '/libc.so/ {print $3}')
out=$(LD_PRELOAD=$other "$cmd" --stats --max-pinned=1G --cuda off FOO=bar -- \
      sh -c 'echo "$FOO|$DSP_MAX_PINNED|$DSP_STATS|$DSP_CUDA|$LD_PRELOAD"')
[ "$out" = "bar|1G|1|off|$lib:$other" ] || fail "environment: $out"
out=$(LD_PRELOAD=$lib "$cmd" -- sh -c 'echo $LD_PRELOAD')
[ "$out" = "$lib" ] || fail "library added twice: $out"
"$cmd" sh -c 'exit 7'; [ $? -eq 7 ] || fail "exit status"
"$cmd" -- sh -c 'kill -TERM $$'; [ $? -eq 143 ] || fail "signal"
"$cmd" -- /nonexistent/command 2>/dev/null; [ $? -eq 127 ] || fail "127 for a missing command"
"$cmd" -- /etc/passwd 2>/dev/null; [ $? -eq 126 ] || fail "126 for a non-executable"
# The library must really be active in the child: a pinned allocation there.
out=$("$cmd" --stats -- python3 -c '
import ctypes; l = ctypes.CDLL(None); l.dsp_alloc.restype = ctypes.c_void_p
p = l.dsp_alloc(1 << 20); print(bool(p), l.dsp_is_pinned(ctypes.c_void_p(p), 4096))' 2>&1)
echo "$out" | grep -q '^True 1$' || fail "the library is not active in the command: $out"
echo "$out" | grep -q 'stats: pinned 1 MiB now' || fail "no stats summary: $out"
echo "PASS"
