#!/bin/sh
# $1 the library, $2 libexitcheck.so, $3 the startup_resident program, $4 the
# most zero-filled pages start-up may touch (startup_resident.c).
sections=$(readelf -SW "$1" | sed 's/^ *\[ *[0-9]*\] *//')
field() { echo "$sections" | awk -v s="$1" -v f="$2" '$1 == s { print $f }'; }
bss=$(field .bss 3)
last=.bss
[ -n "$(field .lbss 3)" ] && last=.lbss
end=$(printf '%x' $((0x$(field $last 3) + 0x$(field $last 5))))
locks=$(nm "$1" | awk '$3 == "dsp_fork_locks" { print $1; exit }')
[ -n "$bss" ] && [ -n "$locks" ] || { echo "no .bss or dsp_fork_locks in $1"; exit 1; }
LD_PRELOAD="$1 $2" exec "$3" "$bss" "$end" "$locks" "$4"
