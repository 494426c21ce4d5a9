#!/bin/sh
# The libc functions the library binds lazily in a process that never pins
# (issue 29): each first call of one goes through the loader's resolver, a
# symbol lookup in every loaded object, at start-up. The constructor's parse
# and the hooks a shell reaches (sigaction, open, close) use the library's own
# string tests and system calls; only __register_atfork remains. $1 is the
# library. Read from the loader's own trace (LD_DEBUG=files,bindings): the
# bindings of the library's slots that the shell's process made after the
# library's constructor began. Run without DSP_* variables (a value given
# is parsed with libc's string functions) and without LD_BIND_NOW (every
# slot would be bound at load, and the test would pass vacuously).
lib=$1
for v in $(env | sed -n 's/^\(DSP_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
unset LD_BIND_NOW
trace=$(LD_PRELOAD=$lib LD_DEBUG=files,bindings sh -c 'trap "echo" INT; exec 3</dev/null; exit 0' 2>&1)
# The process that ran the library's constructor: its pid is the trace's first field.
pid=$(echo "$trace" | awk -v lib="$lib" 'index($0, "calling init: " lib) { sub(/:$/, "", $1); print $1; exit }')
if [ -z "$pid" ]; then
  echo "FAIL: the loader's trace shows no 'calling init: $lib' (LD_DEBUG ignored?)"
  exit 1
fi
names=$(echo "$trace" | awk -v lib="$lib" -v pid="$pid" '
    { p = $1; sub(/:$/, "", p) }
    p == pid && index($0, "calling init: " lib) { init = 1; next }
    init && p == pid && index($0, "binding file " lib " ") { sub(/.*`/, ""); sub(/'"'"'.*/, ""); print }')
echo "bound lazily: $(echo ${names:-(none)})"
extra=$(echo "$names" | grep -v -x -e '' -e __register_atfork)
if [ -n "$extra" ]; then
  echo "FAIL: bound lazily at start-up: $(echo $extra)"
  exit 1
fi
