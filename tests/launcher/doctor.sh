#!/bin/sh
# The doctor on this machine: an ext4 path and a tmpfs path, then with
# RLIMIT_MEMLOCK lowered and CAP_IPC_LOCK dropped.
cmd=$1 ext4=$2
fail() { echo "FAIL: $*"; exit 1; }
out=$("$cmd" doctor "$ext4" /dev/shm) || fail "doctor failed on a healthy machine: $out"
for check in library memlock budget 'memory cgroup' vm.max_map_count 'transparent hugepages' 'NUMA placement' libaio libcudart libcufile; do
  echo "$out" | grep -qE "^(OK|WARN|FAIL) +$check " || fail "no '$check' line: $out"
done
echo "$out" | grep -q '^OK    library' || fail "library: $out"
echo "$out" | grep -qE '^(OK|WARN) +vm.max_map_count +[0-9]+: the manager keeps the last [0-9]+ maps' ||
  fail "map count: $out"
# The build directory is on ext4 on these machines; elsewhere, its own line.
case $(stat -f -c %T "$ext4") in
  ext2/ext3) echo "$out" | grep -qE "^OK +$ext4 +ext4: O_DIRECT works; alignment [0-9]+ bytes in memory" ||
               fail "ext4 path: $out" ;;
  *) echo "$out" | grep -qE "^(OK|WARN) +$ext4 " || fail "path line: $out" ;;
esac
echo "$out" | grep -qE '^OK +/dev/shm +tmpfs: O_DIRECT works; no alignment reported' || fail "tmpfs path: $out"
echo "$out" | grep -qE '^[0-9]+ FAIL, [0-9]+ WARN$' || fail "summary line: $out"
out=$(setpriv --inh-caps=-ipc_lock --bounding-set=-ipc_lock sh -c "ulimit -l 64; '$cmd' doctor") || fail "doctor: $out"
echo "$out" | grep -q '^WARN  memlock .*RLIMIT_MEMLOCK is 64 KiB and CAP_IPC_LOCK is missing.*ulimit -l unlimited' ||
  fail "low memlock not explained: $out"
echo "$out" | grep -q 'pins up to 64 KiB (RLIMIT_MEMLOCK)' || fail "budget under low memlock: $out"
out=$("$cmd" doctor /nonexistent/dir); [ $? -eq 1 ] || fail "a FAIL must exit 1"
echo "$out" | grep -q '^FAIL  /nonexistent/dir' || fail "missing path: $out"
echo "PASS"
