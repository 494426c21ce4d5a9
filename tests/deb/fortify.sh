#!/bin/sh
# tests/deb/fortify.sh SRC CC...: the signal-mask hooks compile under
# _FORTIFY_SOURCE, which Debian's build flags (dpkg-buildflags) and Ubuntu's
# compiler turn on, and still define each of longjmp, _longjmp, siglongjmp and
# __longjmp_chk. <setjmp.h> renames the first three to __longjmp_chk there, so
# the package's build stopped in the assembler (issue 31).
src=$1
shift
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
"$@" -std=c11 -D_GNU_SOURCE -fvisibility=hidden -fPIC -O2 -D_FORTIFY_SOURCE=2 \
  -I"$src/include" -I"$src/src" -I"$src/io" -I"$src/preload" \
  -c "$src/preload/sigcalls.c" -o "$tmp/sigcalls.o" || { echo "FAIL: preload/sigcalls.c does not compile with -O2 -D_FORTIFY_SOURCE=2"; exit 1; }
for sym in longjmp _longjmp siglongjmp __longjmp_chk; do
  nm --defined-only "$tmp/sigcalls.o" | grep -q " T $sym$" ||
    { echo "FAIL: under _FORTIFY_SOURCE preload/sigcalls.c does not define $sym"; nm --defined-only "$tmp/sigcalls.o"; exit 1; }
done
echo "sigcalls.c builds under _FORTIFY_SOURCE"
