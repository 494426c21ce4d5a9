#!/bin/sh
# $1 the library, $2 the fork_locks_page program (fork_locks_page.c).
off=$(nm "$1" | awk '$3 == "dsp_fork_locks" { print $1; exit }')
[ -n "$off" ] || { echo "dsp_fork_locks: not in the symbol table"; exit 1; }
LD_PRELOAD=$1 exec "$2" "$off"
