#!/bin/sh
# DSP_STATS_FILE in a shared directory, attacked by another local user
# (uid 65534) while root runs the shim (issue 14). Each case failed before:
# root followed the planted symlinks, truncated the other user's file and hung
# at exit on the FIFO.
# Usage: stats_file.sh PROG (a program linked with libdspreload.so)
prog=$1
fail() { echo "FAIL: $*"; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "FAIL: run as root (the attacker is uid 65534)"; exit 1; }
as_attacker() { setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"; }
top=$(mktemp -d) && chmod 755 "$top" && trap 'rm -rf "$top"' EXIT
shared=$top/tmp && mkdir -m 1777 "$shared" # like /tmp
victim=$top/victim && echo secret >"$victim" && chmod 600 "$victim"

# 1. A symlink planted at the name the documented %p pattern gives the next
# process: the process stops before it runs, the attacker plants the link for
# its pid, then it runs to its exit.
for i in 1 2 3; do
  DSP_STATS_FILE="$shared/dsp.%p.json" sh -c 'kill -STOP $$; exec "$0"' "$prog" 2>>"$top/err" &
  pid=$!
  until [ "$(ps -o stat= -p $pid | cut -c1)" = T ]; do sleep 0.05; done
  as_attacker ln -s "$victim" "$shared/dsp.$pid.json" || fail "the attacker could not plant the link"
  kill -CONT $pid
  wait $pid || fail "run $i exited $?"
done
[ "$(cat "$victim")" = secret ] || fail "the victim file was overwritten: $(head -c 200 "$victim")"
grep -q 'is a symbolic link, not a regular file; left alone' "$top/err" ||
  fail "no warning for the planted link: $(cat "$top/err")"
[ -z "$(find "$shared" -mindepth 1 -user 0)" ] || fail "root left files in the shared directory: $(find "$shared" -mindepth 1 -user 0)"

# 2. A file of the other user at the name: not truncated, not replaced.
as_attacker sh -c "echo theirs >'$shared/own.json'"
DSP_STATS_FILE="$shared/own.json" "$prog" 2>"$top/err" || fail "own.json run"
[ "$(cat "$shared/own.json")" = theirs ] || fail "the other user's file was written"
[ "$(stat -c %u "$shared/own.json")" = 65534 ] || fail "the other user's file was replaced"
grep -q 'belongs to uid 65534' "$top/err" || fail "no warning: $(cat "$top/err")"

# 3. A FIFO at the name: exit must not block (timeout: the hang was the bug).
as_attacker mkfifo "$shared/fifo.json"
DSP_STATS_FILE="$shared/fifo.json" timeout 20 "$prog" 2>"$top/err"
rc=$?
[ $rc -ne 124 ] || fail "exit blocked on the FIFO"
[ $rc -eq 0 ] || fail "FIFO run exited $rc"
grep -q 'is a FIFO' "$top/err" || fail "no warning: $(cat "$top/err")"

# 4. The file root writes is root's alone (0600) and complete.
DSP_STATS_FILE="$top/mine.json" "$prog" || fail "plain run"
[ "$(stat -c %a "$top/mine.json")" = 600 ] || fail "mode $(stat -c %a "$top/mine.json"), not 600"
grep -q '"pid":' "$top/mine.json" || fail "no object written"
echo PASS
