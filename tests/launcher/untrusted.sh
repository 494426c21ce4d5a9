#!/bin/sh
# What the launcher is handed (library paths, LD_PRELOAD, variable names,
# stats files, doctor paths) must never be turned against its user (issue 14).
# usage: untrusted.sh CHECK DSPRELOAD LIBRARY
# Where this runs as root, the attacker's steps run as nobody (uid 65534).
check=$1 cmd=$2 lib=$3
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp" # nobody must reach the directories made for it below
as_attacker() { # as_attacker SCRIPT
  if [ "$(id -u)" -eq 0 ]; then
    setpriv --reuid=65534 --regid=65534 --clear-groups sh -c "$1"
  else
    sh -c "$1"
  fi
}
# A directory like /tmp: everyone may create files, only owners remove them.
shared=$tmp/shared
mkdir "$shared" && chmod 1777 "$shared"

case $check in
lib_separators)
  # ld.so splits LD_PRELOAD at spaces and colons: such a path is never loaded.
  for d in "a b" "c:d"; do
    mkdir "$tmp/$d" && cp "$lib" "$tmp/$d/libdspreload.so"
    out=$("$cmd" --lib "$tmp/$d/libdspreload.so" -- true 2>&1); rc=$?
    [ $rc -eq 2 ] || fail "--lib '$tmp/$d/...': exit $rc, not 2: $out"
    echo "$out" | grep -qF "the library path '$tmp/$d/libdspreload.so' has a space or colon, which LD_PRELOAD takes as separators" ||
      fail "no reason given for '$d': $out"
    echo "$out" | grep -q 'ld.so' && fail "ld.so ran with the bad path: $out"
  done
  # A symlink without them to such a library is the safe form: kept as given.
  ln -s "$tmp/a b/libdspreload.so" "$tmp/link.so"
  active='import ctypes; print(hasattr(ctypes.CDLL(None), "dsp_alloc"))'
  out=$("$cmd" --lib "$tmp/link.so" -- sh -c 'echo "$LD_PRELOAD"' 2>&1)
  [ "$out" = "$tmp/link.so" ] || fail "symlink without separators not used as given: $out"
  out=$(cd "$tmp" && "$cmd" --lib link.so -- python3 -c "$active" 2>&1)
  [ "$out" = True ] || fail "library not active through a relative symlink: $out"
  # Installed under such a path: refused the same way; the doctor says so.
  inst="$tmp/my tools"
  mkdir "$inst" && cp "$cmd" "$lib" "$inst/"
  out=$("$inst/dspreload" -- true 2>&1); rc=$?
  [ $rc -eq 2 ] || fail "installed under a space: exit $rc, not 2: $out"
  echo "$out" | grep -qF "'$inst/libdspreload.so' has a space or colon" || fail "installed: $out"
  out=$("$inst/dspreload" doctor 2>&1); [ $? -eq 1 ] || fail "doctor must FAIL: $out"
  echo "$out" | grep -qF "FAIL  library                the library path '$inst/libdspreload.so' has a space" ||
    fail "doctor does not name the separator: $out"
  out=$("$inst/dspreload" --lib "$tmp/link.so" -- python3 -c "$active" 2>&1)
  [ "$out" = True ] || fail "the fix the message gives does not work: $out"
  ;;
preload_entries)
  # The caller's LD_PRELOAD is searched for the library as a whole entry.
  for other in "/x$lib" "$lib.bak" "/x$lib.bak"; do
    out=$(LD_PRELOAD=$other "$cmd" -- sh -c 'echo "$LD_PRELOAD"' 2>/dev/null)
    [ "$out" = "$lib:$other" ] || fail "'$other' taken for the library: $out"
  done
  for list in "$lib" "/x.so:$lib" "/x.so $lib" "$lib::/x.so"; do
    out=$(LD_PRELOAD=$list "$cmd" -- sh -c 'echo "$LD_PRELOAD"' 2>/dev/null)
    [ "$out" = "$list" ] || fail "library added again to '$list': $out"
  done
  ;;
stats_totals)
  # Counters are unsigned 64-bit: values past INT64_MAX, and totals past
  # UINT64_MAX, printed as they are.
  max=18446744073709551615 half=9223372036854775807
  printf '{"version":"x","pid":1,"pinned_bytes_peak":%s,"pool_hits":%s,"pool_misses":%s}\n' \
    $max $max $half > "$tmp/a.json"
  printf '{"version":"x","pid":2,"pinned_bytes_peak":%s,"pool_hits":%s,"pool_misses":%s}\n' \
    $max $max $half > "$tmp/b.json"
  printf '{"version":"x","pid":3,"pool_hits":-5,"pool_misses":18446744073709551616}\n' > "$tmp/c.json"
  out=$("$cmd" stats "$tmp/a.json" "$tmp/b.json" "$tmp/c.json") || fail "stats: $out"
  # The second column is the rank: none in these files.
  echo "$out" | grep -qE "^1 +- +16 EiB +- +$max +$half " || fail "a row past INT64_MAX: $out"
  echo "$out" | grep -qE '^3 +- +- +- +- +- ' || fail "a negative or too large value is no counter: $out"
  echo "$out" | grep -qE '^total +32 EiB +0 +36893488147419103230 +18446744073709551614 ' ||
    fail "totals overflow: $out"
  ;;
long_names)
  # VAR=value names of any length are set whole, never cut.
  for len in 255 256 300 5000; do
    name=$(printf "%${len}s" | tr ' ' V)
    out=$("$cmd" "$name=x" -- env | grep -c "^$name=x\$")
    [ "$out" -eq 1 ] || fail "a $len-character name is not set as given"
    [ "$("$cmd" "$name=x" -- env | grep -c "^V*=x\$")" -eq 1 ] || fail "$len: set twice or cut"
  done
  ;;
options_before_subcommand)
  mkdir "$tmp/copy" && cp "$lib" "$tmp/copy/libdspreload.so"
  out=$("$cmd" --lib "$tmp/copy/libdspreload.so" doctor 2>&1) || fail "--lib X doctor: $out"
  echo "$out" | grep -qE "^OK +library +$tmp/copy/libdspreload.so " || fail "doctor did not check --lib: $out"
  out=$("$cmd" --max-pinned 1G doctor 2>&1) || fail "--max-pinned 1G doctor: $out"
  echo "$out" | grep -q 'pins up to 1 GiB (DSP_MAX_PINNED)' || fail "doctor did not see --max-pinned: $out"
  # After --, a program of that name runs.
  mkdir "$tmp/bin" && printf '#!/bin/sh\necho "program $0 $*"\n' > "$tmp/bin/doctor" && chmod +x "$tmp/bin/doctor"
  out=$(PATH=$tmp/bin:$PATH "$cmd" --lib "$tmp/copy/libdspreload.so" -- doctor x 2>&1)
  [ "$out" = "program $tmp/bin/doctor x" ] || fail "-- doctor must run the program: $out"
  out=$(PATH=$tmp/bin:$PATH "$cmd" FOO=1 -- doctor 2>&1)
  [ "$out" = "program $tmp/bin/doctor " ] || fail "VAR=1 -- doctor must run the program: $out"
  # Nothing set before env or stats applies to them: a usage error.
  for args in "--lib $tmp/copy/libdspreload.so env" "--stats stats $tmp/x.json" "FOO=1 env"; do
    out=$("$cmd" $args 2>&1); rc=$?
    [ $rc -eq 2 ] || fail "'$args': exit $rc, not 2: $out"
    echo "$out" | grep -q 'takes no options before it' || fail "'$args': $out"
    echo "$out" | grep -q '^usage: dspreload' || fail "'$args': no usage line: $out"
  done
  ;;
stats_open_errors)
  out=$("$cmd" stats "$tmp/missing.json" 2>&1); [ $? -eq 1 ] || fail "a missing file must fail"
  echo "$out" | grep -qF "dspreload: stats: cannot open $tmp/missing.json: No such file or directory" ||
    fail "missing file: $out"
  for f in "$tmp" /dev/null; do
    out=$("$cmd" stats "$f" 2>&1); [ $? -eq 1 ] || fail "$f must fail"
    echo "$out" | grep -qF "dspreload: stats: $f is not a regular file" || fail "$f: $out"
  done
  if [ "$(id -u)" -eq 0 ]; then
    echo '{"pid":1}' > "$tmp/secret.json" && chmod 600 "$tmp/secret.json"
    out=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$cmd" stats "$tmp/secret.json" 2>&1)
    echo "$out" | grep -qF "cannot open $tmp/secret.json: Permission denied" || fail "unreadable: $out"
  fi
  echo '{"not":"ours"}' > "$tmp/bad.json"
  out=$("$cmd" stats "$tmp/bad.json" 2>&1); [ $? -eq 1 ] || fail "a foreign file must fail"
  echo "$out" | grep -qF "$tmp/bad.json is not a dspreload stats file" || fail "foreign file: $out"
  ;;
fifo)
  # A FIFO (or a symlink to one) where a stats file or a doctor path is
  # expected: refused at once, never read from (which would wait forever).
  as_attacker "mkfifo '$shared/s.1.json' && ln -s '$shared/s.1.json' '$shared/s.2.json'" ||
    fail "attacker setup"
  for f in s.1.json s.2.json; do
    out=$(timeout 10 "$cmd" stats "$shared/$f" 2>&1); rc=$?
    [ $rc -eq 124 ] && fail "stats hangs on a FIFO ($f)"
    [ $rc -eq 1 ] || fail "stats on a FIFO: exit $rc: $out"
    echo "$out" | grep -qF "$shared/$f is not a regular file" || fail "stats FIFO: $out"
    out=$(timeout 10 "$cmd" doctor "$shared/$f" 2>&1); rc=$?
    [ $rc -eq 124 ] && fail "doctor hangs on a FIFO ($f)"
    [ $rc -eq 1 ] || fail "doctor on a FIFO: exit $rc: $out"
    echo "$out" | grep -qF "FAIL  $shared/$f not a regular file or directory" || fail "doctor FIFO: $out"
  done
  out=$(timeout 10 "$cmd" doctor /dev/null 2>&1); [ $? -eq 1 ] || fail "doctor /dev/null must FAIL: $out"
  # A regular file named to the doctor is only read.
  head -c 8192 /dev/urandom > "$tmp/data" && cp "$tmp/data" "$tmp/data.orig"
  as_attacker "ln -s '$tmp/data' '$shared/data'"
  out=$("$cmd" doctor "$shared/data" 2>&1)
  echo "$out" | grep -qE "^(OK|WARN) +$shared/data " || fail "doctor on a file: $out"
  cmp -s "$tmp/data" "$tmp/data.orig" || fail "doctor changed a file it was given"
  ;;
doctor_race)
  # The doctor's test file in a directory the attacker may write: every one
  # that appears is replaced at once by a symlink to a root-owned 0600 file.
  # The doctor writes only through the descriptor it created the file with, so
  # the victim never changes (before: a reopen by name zeroed its first 4 KiB).
  command -v python3 >/dev/null || { echo "SKIP: no python3"; exit 77; }
  attic=$tmp/attic
  mkdir "$attic"
  [ "$(id -u)" -eq 0 ] && chown 65534:65534 "$attic"
  head -c 8192 /dev/urandom > "$tmp/victim" && chmod 600 "$tmp/victim" && cp "$tmp/victim" "$tmp/victim.orig"
  cat > "$tmp/swap.py" <<'EOF'
import os, sys, time
d, victim, stop = sys.argv[1], sys.argv[2], sys.argv[3]
link = os.path.join(d, "link")
swaps = 0
while not os.path.exists(stop):
    for e in os.scandir(d):
        if e.name.startswith(".dspreload-doctor-") and not e.is_symlink():
            try:
                os.symlink(victim, link)
                os.rename(link, e.path)
                swaps += 1
            except OSError:
                pass
print(swaps)
EOF
  chmod 644 "$tmp/swap.py"
  as_attacker "python3 '$tmp/swap.py' '$attic' '$tmp/victim' '$tmp/stop' > '$shared/swaps'" &
  attacker=$!
  sleep 0.3
  paths=$(for i in $(seq 200); do printf '%s ' "$attic"; done)
  end=$(($(date +%s) + 6))
  runs=0
  while [ "$(date +%s)" -lt $end ]; do
    "$cmd" doctor $paths > "$tmp/out" 2>&1
    runs=$((runs + 1))
    cmp -s "$tmp/victim" "$tmp/victim.orig" || break
  done
  touch "$tmp/stop"
  wait $attacker
  echo "$runs doctor runs of 200 paths; $(cat "$shared/swaps") files swapped for a symlink"
  cmp -s "$tmp/victim" "$tmp/victim.orig" || fail "the doctor wrote to a file it did not create"
  grep -qE "^OK +$attic " "$tmp/out" || fail "doctor on the directory: $(head -c 2000 "$tmp/out")"
  # (The attacker's symlinks may remain: names it took after the unlink.)
  [ -z "$(find "$attic" -type f)" ] || fail "test files left behind: $(find "$attic" -type f)"
  # The file's name is opened once, at creation (strace: scripts/deps).
  command -v strace >/dev/null || fail "strace missing (scripts/deps installs it)"
  strace -f -e trace=open,openat -o "$tmp/trace" "$cmd" doctor "$tmp" > /dev/null 2>&1
  n=$(grep -c '\.dspreload-doctor-' "$tmp/trace")
  [ "$n" -eq 1 ] || fail "the test file's name opened $n times: $(grep dspreload-doctor "$tmp/trace")"
  grep '\.dspreload-doctor-' "$tmp/trace" | grep -q 'O_CREAT|O_EXCL' || fail "not made with O_EXCL"
  ;;
doctor_key_escaped)
  # A DSP_NODE_KEY with control characters (a terminal escape) is shown
  # escaped by doctor, as stats --node shows it, never written raw.
  esc=$(printf '\033')
  out=$(DSP_NODE_KEY="a${esc}[31mb" "$cmd" doctor 2>&1)
  echo "$out" | grep -q "$esc" && fail "doctor wrote the key's escape raw"
  echo "$out" | grep -qF 'key:a\x1b[31mb' || fail "doctor did not show the key escaped: $out"
  echo "doctor shows the node key escaped"
  ;;
*) fail "unknown check '$check'" ;;
esac
echo "PASS"
