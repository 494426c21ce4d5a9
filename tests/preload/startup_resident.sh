#!/bin/sh
# $1 the library, $2 libexitcheck.so, $3 the startup_resident program, $4 the
# most zero-filled pages start-up may touch (startup_resident.c). Run without
# DSP_* variables: hints on (DSP_MALLOC_MIN) or other settings touch more.
# Exit 77 (skipped) where the count does not apply: a compiler without .lbss
# (not x86-64), or multi-size transparent huge pages set to always for pages
# below 2 MiB (one fault then makes a whole folio resident).
if [ "$(uname -m)" != x86_64 ]; then
  echo "SKIP: the page count assumes x86-64's .lbss"
  exit 77
fi
thp=/sys/kernel/mm/transparent_hugepage
top=$(cat $thp/enabled 2>/dev/null)
for f in $thp/hugepages-*kB/enabled; do
  [ -r "$f" ] || continue
  kb=${f#$thp/hugepages-}
  kb=${kb%kB/enabled}
  [ "$kb" -lt 2048 ] || continue
  v=$(cat "$f")
  case "$v" in
    *"[always]"*) echo "SKIP: ${kb} kB transparent huge pages are always on"; exit 77 ;;
    *"[inherit]"*) case "$top" in *"[always]"*) echo "SKIP: ${kb} kB transparent huge pages inherit always"; exit 77 ;; esac ;;
  esac
done
for v in $(env | sed -n 's/^\(DSP_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
sections=$(readelf -SW "$1" | sed 's/^ *\[ *[0-9]*\] *//')
field() { echo "$sections" | awk -v s="$1" -v f="$2" '$1 == s { print $f }'; }
bss=$(field .bss 3)
locks=$(nm "$1" | awk '$3 == "dsp_fork_locks" { print $1; exit }')
[ -n "$bss" ] && [ -n "$locks" ] || { echo "no .bss or dsp_fork_locks in $1"; exit 1; }
last=.bss
[ -n "$(field .lbss 3)" ] && last=.lbss
end=$(printf '%x' $((0x$(field $last 3) + 0x$(field $last 5))))
LD_PRELOAD="$1 $2" exec "$3" "$bss" "$end" "$locks" "$4"
