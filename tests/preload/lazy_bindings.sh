#!/bin/sh
# The libc functions the library binds lazily in a process that never pins
# (issue 29): each first call of one goes through the loader's resolver, a
# symbol lookup in every loaded object, at start-up. The constructor's parse
# and the hooks a shell reaches (sigaction, open, close) use the library's own
# string tests and system calls; only __register_atfork remains. $1 is the
# library. Read from the loader's own trace (LD_DEBUG=files,bindings): the
# bindings of the library's slots made after its constructor began.
lib=$1
names=$(LD_PRELOAD=$lib LD_DEBUG=files,bindings sh -c 'trap "echo" INT; exec 3</dev/null; exit 0' 2>&1 |
  awk -v lib="$lib" 'index($0, "calling init: " lib) { init = 1; next }
    init && index($0, "binding file " lib " ") { sub(/.*`/, ""); sub(/'"'"'.*/, ""); print }')
echo "bound lazily: $(echo ${names:-(none)})"
extra=$(echo "$names" | grep -v -x -e '' -e __register_atfork)
if [ -n "$extra" ]; then
  echo "FAIL: bound lazily at start-up: $(echo $extra)"
  exit 1
fi
