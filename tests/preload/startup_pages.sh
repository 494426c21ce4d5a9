#!/bin/sh
# The constructor's page faults (issue 29): every page of .bss it touches
# first costs a fault, as much as the rest of its work. So the variables it
# always writes lie in .data, on the page the loader has written already, and
# the large zeroed arrays lie in .lbss, past the small variables of .bss
# (src/internal.h: DSP_STARTUP_DATA, DSP_LARGE_BSS), and the code it runs lies
# together (DSP_STARTUP_TEXT). Read from the library's
# own section and symbol tables; $1 is the library.
lib=$1
sections=$(readelf -SW "$lib" | sed 's/^ *\[ *[0-9]*\] *//')
field() { echo "$sections" | awk -v s="$1" -v f="$2" '$1 == s { print $f }'; }
data_lo=$((0x$(field .data 3)))
data_hi=$((data_lo + 0x$(field .data 5)))
fail=0
for v in dsp_init_state init_owner dsp_loaded_pid gate config_owner dsp_glibc_dlsym_ptr \
    dsp_glibc_dlvsym_ptr; do
  a=$(nm "$lib" | awk -v v="$v" '$3 == v { print $1; exit }')
  if [ -z "$a" ]; then echo "$v: not in the symbol table"; fail=1; continue; fi
  a=$((0x$a))
  if [ "$a" -lt "$data_lo" ] || [ "$a" -ge "$data_hi" ]; then
    echo "$v at $a: outside .data [$data_lo, $data_hi)"
    fail=1
  fi
done
# The code the constructor runs lies in one 64 KiB window of the library (the
# kernel maps a file's pages 64 KiB at a time around a fault): DSP_STARTUP_TEXT;
# so do the malloc family's hooks, which glibc's own start-up calls reach.
window() { echo $(($1 / 65536)); }
ctor=$(nm "$lib" | awk '$3 == "dsp_preload_init" { print $1; exit }')
for f in dsp_sigcalls_init dsp_fdcalls_init dsp_sym_next_all dsp_init_slow dsp_config_load_as \
    dsp_fork_install dsp_malloc_init dsp_bind_direct dsp_libc_sym dsp_real_dlsym dsp_log \
    malloc free calloc realloc; do
  a=$(nm "$lib" | awk -v f="$f" '$3 == f { print $1; exit }')
  if [ -z "$a" ]; then echo "$f: not in the symbol table"; fail=1; continue; fi
  if [ "$(window $((0x$a)))" != "$(window $((0x$ctor)))" ]; then
    echo "$f at 0x$a: not in the constructor's 64 KiB window (0x$ctor)"
    fail=1
  fi
done
# The loader's DT_FINI too (-Wl,-fini): crti.o's _fini sits on the last page.
fini=$(readelf -d "$lib" | awk '$2 == "(FINI)" { print $3 }')
if [ -z "$fini" ] || [ "$(window $((fini)))" != "$(window $((0x$ctor)))" ]; then
  echo "DT_FINI ($fini) not in the constructor's 64 KiB window (0x$ctor)"
  fail=1
fi
for v in handler children installed real_sigaction_ptr real_close_ptr; do
  a=$(nm "$lib" | awk -v v="$v" '$3 == v { print $1; exit }')
  [ -n "$a" ] && [ $((0x$a)) -ge "$data_lo" ] && [ $((0x$a)) -lt "$data_hi" ] ||
    { echo "$v: not in .data"; fail=1; }
done
# Only x86-64 compilers put .lbss apart; elsewhere .bss holds everything.
if [ "$(uname -m)" = x86_64 ]; then
  bss=$((0x$(field .bss 5)))
  if [ "$bss" -gt 32768 ]; then
    echo ".bss is $bss bytes (over 32 KiB): a large array without DSP_LARGE_BSS?"
    nm -S --size-sort "$lib" | awk '$3 ~ /^[bB]$/' | tail -5
    fail=1
  fi
fi
exit $fail
