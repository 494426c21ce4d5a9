#!/bin/sh
# A setuid-root program linked with the library, run by another user (uid
# 65534) who sets DSP_* variables (issue 14): before, DSP_STATS_FILE made root
# write a file the user chose. Under AT_SECURE only off switches are honoured.
# Usage: secure_execution.sh PROG (a program linked with libdspreload.so by an
# absolute runpath, which ld.so keeps in secure mode)
prog=$1
fail() { echo "FAIL: $*"; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "FAIL: run as root (the user is uid 65534)"; exit 1; }
top=$(mktemp -d) && chmod 755 "$top" && trap 'rm -rf "$top"' EXIT
cp "$prog" "$top/suid" && chmod 4755 "$top/suid" || fail "cannot make the setuid copy"
mkdir -m 1777 "$top/drop"
as_user() { setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"; }

out=$(as_user env DSP_STATS_FILE="$top/drop/root.json" DSP_LOG=debug DSP_MAX_PINNED=1T \
  DSP_CUDA=off "$top/suid" 2>&1) || fail "the setuid program failed: $out"
[ ! -e "$top/drop/root.json" ] || fail "root wrote the file the user named"
echo "$out" | grep -q 'secure execution (setuid, setgid or file capabilities): DSP_STATS_FILE, DSP_LOG, DSP_MAX_PINNED ignored' ||
  fail "no warning naming the ignored variables: $out"
[ "$(echo "$out" | wc -l)" -eq 1 ] || fail "one line expected: $out"

# The same program without the setuid bit honours them all.
cp "$prog" "$top/plain" && chmod 755 "$top/plain"
as_user env DSP_STATS_FILE="$top/drop/user.json" "$top/plain" || fail "the plain program failed"
[ "$(stat -c %u "$top/drop/user.json" 2>/dev/null)" = 65534 ] || fail "the plain run wrote no file"
echo PASS
