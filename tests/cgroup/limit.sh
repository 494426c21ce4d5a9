#!/bin/sh
# limit.sh LIB PROGRAM DSPRELOAD: runs PROGRAM under LD_PRELOAD=LIB inside a new memory
# cgroup limited to 512 MiB (v2 memory.max where the v2 hierarchy has the
# memory controller, else v1 memory.limit_in_bytes), twice: with the auto
# budget (which follows the cgroup) and with DSP_MAX_PINNED=4G (so only the
# populate guard stands between a 1 GiB pin and the OOM killer). Exit 77
# (skipped) only where no memory cgroup can be created (not root).
# MALLOC_PERTURB_ (set by meson test) is dropped: glibc would fill the
# program's plain malloc(1 GiB) and that alone would exceed the limit.
lib=$1 prog=$2 cmd=$3
limit=$((512 << 20))
path=$(sed -n 's/^0:://p' /proc/self/cgroup)
if grep -qw memory /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
  dir=/sys/fs/cgroup${path%/}/dsp-test-$$; file=memory.max; swap=memory.swap.max
else
  v1=$(sed -n 's/^[0-9]*:\([^:]*,\)\{0,1\}memory\(,[^:]*\)\{0,1\}:\(.*\)$/\3/p' /proc/self/cgroup)
  dir=/sys/fs/cgroup/memory${v1%/}/dsp-test-$$; file=memory.limit_in_bytes; swap=memory.memsw.limit_in_bytes
fi
if ! mkdir "$dir" 2>/dev/null; then echo "SKIP: cannot create a memory cgroup ($dir)"; exit 77; fi
trap 'rmdir "$dir" 2>/dev/null' EXIT
echo $limit > "$dir/$file" || { echo "FAIL: cannot set $dir/$file"; exit 1; }
[ -e "$dir/$swap" ] && echo $limit > "$dir/$swap" 2>/dev/null  # no swap to hide the limit
status=0
for budget in auto 4G; do
  sh -c 'echo $$ > "$1/cgroup.procs" && exec env -u MALLOC_PERTURB_ LD_PRELOAD="$2" DSP_MALLOC_MIN=1M DSP_MAX_PINNED="$3" "$4"' \
    sh "$dir" "$lib" "$budget" "$prog"
  rc=$?
  if [ $rc -ne 0 ]; then echo "FAIL: DSP_MAX_PINNED=$budget in a 512 MiB cgroup: exit $rc (137: OOM-killed)"; status=1; fi
done
# The doctor in the same cgroup names the limit and the budget it leads to.
out=$(sh -c 'echo $$ > "$1/cgroup.procs" && exec "$2" doctor' sh "$dir" "$cmd")
echo "$out" | grep -qE '^OK +memory cgroup +v[12] limit 512 MiB .*auto budget at most' ||
  { echo "FAIL: doctor's cgroup line: $out"; status=1; }
echo "$out" | grep -q "(80% of the memory cgroup's room)" || { echo "FAIL: doctor's budget line: $out"; status=1; }
# The ledger file of this cgroup's default key would outlive the test (one
# per run): the doctor names it.
ledger=$(echo "$out" | sed -n 's|^[A-Z]* *node ledger *\(/dev/shm/dspreload-[0-9]*-[0-9a-f]*\) .*|\1|p')
[ -n "$ledger" ] && rm -f "$ledger"
[ $status -eq 0 ] && echo "PASS: refused, not OOM-killed ($dir/$file)"
exit $status
