# Sourced by the tests of this folder: real launchers start ranks through the
# dspreload command, each with a stats file of its own (--stats-file %p).
# Sets $tmp (removed at exit) and $key (a DSP_NODE_KEY no other test uses);
# the caller sets $dsp (the dspreload command) first.
fail() {
  echo "FAIL: $*"
  for f in "$tmp"/*.out "$tmp"/*.log; do [ -s "$f" ] && { echo "--- $f"; tail -n 40 "$f"; }; done
  exit 1
}
tmp=$(mktemp -d) || exit 1
key="test-$(basename "$0" .sh)-$$"
cleanup_hook=: ledger=
# On a signal too (meson's timeout): exit, which runs the EXIT trap, and that
# one is not cut short by the signal sent again to the process group.
trap 'trap "" HUP INT PIPE TERM; eval "$cleanup_hook"; rm -rf "$tmp"; [ -z "$ledger" ] || rm -f "$ledger"' EXIT
trap 'exit 1' HUP INT PIPE TERM
ledger=$(DSP_NODE_KEY="$key" "$dsp" doctor 2>/dev/null | grep -o '/dev/shm/dspreload-[0-9]*-[0-9a-f]*' | head -1)
[ -n "$ledger" ] || fail "doctor shows no ledger path for key $key"
mkdir "$tmp/stats"

# num FILE KEY: one number of a stats file (one JSON object on one line).
num() { sed -n "s/.*\"$2\":\([0-9]*\).*/\1/p" "$1"; }

# check_ranks OUT N: the launcher's output OUT holds "pid rank R P" for ranks
# 0..N-1; $tmp/stats holds exactly one file per rank, dsp.P.json, and nothing
# else (the launcher and any helper that pinned nothing write nothing).
# Prints the files, rank order.
check_ranks() {
  files=$(ls "$tmp/stats")
  [ "$(echo "$files" | grep -c .)" -eq "$2" ] || fail "want $2 stats files, one per rank: $files"
  r=0
  while [ $r -lt "$2" ]; do
    pid=$(sed -n "s/^\(\[[^]]*\]:\)\{0,1\}pid rank $r \([0-9]*\)$/\2/p" "$1")
    [ -n "$pid" ] || fail "rank $r printed no pid"
    f=$tmp/stats/dsp.$pid.json
    [ -f "$f" ] || fail "no stats file of rank $r (pid $pid): $files"
    [ "$(num "$f" pid)" = "$pid" ] || fail "$f is not pid $pid's: $(cat "$f")"
    echo "$f"
    r=$((r + 1))
  done
}
