#!/bin/sh
# Preloaded into a program that never pins: silent, harmless, exit status kept,
# no address space reserved; with DSP_STATS=1, the summary at exit.
lib=$1
out=$(LD_PRELOAD=$lib /bin/true 2>&1) || { echo "true failed under the shim"; exit 1; }
[ -z "$out" ] || { echo "unexpected output: $out"; exit 1; }
LD_PRELOAD=$lib sh -c 'exit 3'; [ $? -eq 3 ] || { echo "exit status not kept"; exit 1; }
# A process that pins nothing reports nothing, even when asked (a job's
# shells and helpers would flood stderr and the stats directory).
out=$(DSP_STATS=1 DSP_STATS_FILE=/tmp/dsp-idle.%p.json LD_PRELOAD=$lib /bin/true 2>&1)
[ -z "$out" ] || { echo "idle process printed: $out"; exit 1; }
ls /tmp/dsp-idle.*.json 2>/dev/null && { echo "idle process wrote a stats file"; rm -f /tmp/dsp-idle.*.json; exit 1; }
out=$(DSP_MAX_PINED=1G LD_PRELOAD=$lib /bin/true 2>&1)
echo "$out" | grep -q 'unknown variable DSP_MAX_PINED ignored; did you mean DSP_MAX_PINNED?' || { echo "no suggestion: $out"; exit 1; }
# At start-up only the options are read (issue 29): the budget's line comes
# with the first pin, which /bin/true never makes.
out=$(DSP_LOG=info LD_PRELOAD=$lib /bin/true 2>&1)
echo "$out" | grep -q 'ready; the budget is planned at the first pin' || { echo "no ready line: $out"; exit 1; }
echo "$out" | grep -q 'budget [0-9]' && { echo "budget planned at start-up: $out"; exit 1; }
# Virtual size must not grow by the arena until something is pinned.
vsz_plain=$(sh -c 'grep VmSize /proc/self/status' | awk '{print $2}')
vsz_shim=$(LD_PRELOAD=$lib sh -c 'grep VmSize /proc/self/status' | awk '{print $2}')
[ $((vsz_shim - vsz_plain)) -lt 65536 ] || { echo "arena reserved eagerly: $vsz_plain -> $vsz_shim kB"; exit 1; }
echo "preload ok"
