#!/bin/sh
# Data integrity under the shim: fio writes with O_DIRECT through libaio and
# verifies every block (crc32c, fatal on the first mismatch), in every
# DSP_AIO_BOUNCE policy, with threaded and with forked jobs. Buffers at page + 1
# (mem_align=1) are refused by the kernel without the shim (checked first):
# with it, every one of them goes through the bounce path; `all` bounces the
# aligned ones too.
# usage: fio.sh LIBDSPRELOAD DIR
lib=$(realpath "$1") || exit 1
dir=${2:-/tmp}
command -v fio >/dev/null || { echo "fio not installed (scripts/deps installs it)"; exit 1; }
d=$(mktemp -d "$dir/dsp-fio.XXXXXX") && d=$(cd "$d" && pwd) || exit 1
f=$d/stats
trap 'rm -rf "$d"' EXIT
# fio writes local-*-verify.state files into the current folder: every run
# says --verify_state_save=0, and runs in the scratch folder all the same.
cd "$d" || exit 1
run() { # policy mode mem_align extra...
  policy=$1 mode=$2 align=$3; shift 3
  opt=; [ "$mode" = thread ] && opt=--thread
  out=$(env LD_PRELOAD="$lib" DSP_AIO_BOUNCE="$policy" DSP_STATS_FILE="$f.%p" \
    fio --name=v --directory="$d" --size=16M --ioengine=libaio --direct=1 --bs=4k \
      --iodepth=16 --numjobs=2 --verify=crc32c --verify_fatal=1 --do_verify=1 --verify_state_save=0 \
      --mem_align="$align" $opt "$@" --output-format=terse 2>&1)
  status=$?
  rm -f "$d"/v.*
  if [ $status -ne 0 ] || echo "$out" | grep -q "error\|verify:"; then
    echo "FAIL: policy=$policy $mode mem_align=$align $*: fio exit $status"
    echo "$out" | head -20
    exit 1
  fi
  echo "ok: policy=$policy $mode mem_align=$align $*"
}
bounced() { # total aio_bounced over the stats files of the last run
  cat "$f".* 2>/dev/null | sed -n 's/.*"aio_bounced":\([0-9]*\).*/\1/p' |
    awk '{s += $1} END {print s + 0}'
}
# Without the shim, misaligned buffers fail on a disk filesystem: the bounce
# path is what fixes them. (tmpfs takes any alignment; the shim, which cannot
# know that, bounces them too.)
fstype=$(stat -f -c %T "$dir")
if [ "$fstype" != tmpfs ] && fio --name=v --directory="$d" --size=4M --ioengine=libaio --direct=1 --bs=4k --rw=randwrite \
    --mem_align=1 --verify_state_save=0 --output-format=terse >/dev/null 2>&1; then
  echo "FAIL: fio with mem_align=1 succeeded without the shim: this kernel accepts the buffers"
  exit 1
fi
for mode in thread fork; do
  for rw in randwrite write; do
    run misaligned $mode 1 --rw=$rw
    run unpinned $mode 0 --rw=$rw
    run all $mode 0 --rw=$rw
    run never $mode 0 --rw=$rw
  done
  run misaligned $mode 1 --rw=randrw --bs=64k
done
# Threaded jobs write their statistics at exit: the bounces really happened.
rm -f "$f".*
run all thread 0 --rw=randwrite
n=$(bounced)
[ "$n" -gt 0 ] || { echo "FAIL: policy=all bounced nothing ($n)"; exit 1; }
rm -f "$f".*
run never thread 0 --rw=randwrite
n=$(bounced)
[ "$n" -eq 0 ] || { echo "FAIL: policy=never bounced $n"; exit 1; }
echo "fio verify ok"
