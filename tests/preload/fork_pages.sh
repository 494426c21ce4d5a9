#!/bin/sh
# fork_pages.sh PROG LIB: the shim's fork handlers write no page of the
# parent's that fork(2) made copy-on-write: in a threaded process all their
# locks share one page the fork leaves out (MADV_WIPEONFORK; before, its
# unlocks faulted once a fork, issue 29), in a single-threaded one they take
# no lock, beyond a stack page their frames may reach, against the same
# program without the shim; and the signal mask is the program's in parent
# and child, two threads forking at once included (issue 13).
prog=$1 lib=$2
# The least of five runs each: where the stack pointer sits in its page
# (randomised at every exec) decides whether the handlers' frames reach one
# more stack page, which the single-threaded allowance covers once; a
# threaded fork has none, and five runs make it unlikely that all of them
# reach one.
least() {
    m=
    for i in 1 2 3 4 5; do
        n=$("$@") || return 1
        [ -z "$m" ] || [ "$n" -lt "$m" ] && m=$n
    done
    echo "$m"
}
for mode in "" threaded; do
    plain=$(least "$prog" faults $mode) || { echo "FAIL: $prog faults $mode"; exit 1; }
    shim=$(least env LD_PRELOAD="$lib" "$prog" faults $mode) || { echo "FAIL: under the shim: faults $mode"; exit 1; }
    # Before (issue 13): 3.5 more single-threaded, 4 more threaded; then
    # (issue 29) one more threaded, the locks' page.
    allowed=$((plain + 1))
    [ -n "$mode" ] && allowed=$plain
    echo "${mode:-single-threaded}: parent faults per fork $plain without, $shim with the shim (at most $allowed)"
    [ "$shim" -le "$allowed" ] || { echo "FAIL: the fork handlers write more pages than they should"; exit 1; }
    LD_PRELOAD=$lib "$prog" mask $mode || exit 1
done
LD_PRELOAD=$lib "$prog" masks || exit 1
echo "PASS"
