#!/bin/sh
# dspreload demo prints figures a person can trust (launcher/figures.h,
# issue 31): no "0.0 ms" against "0.0 ms", times to 3 significant figures in
# their unit, ratios to 2; and installed without the test doubles beside it
# (a package), it skips the CUDA and cuFile sections and still exits 0.
cmd=$1 lib=$2
fail() { echo "FAIL: $*"; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export LC_ALL=C # "µs" matched as its bytes

# $1: the demo's output.
check_figures() {
  echo "$1" | grep -E '(^|[^0-9.])0\.0+ [nµm]?s' && fail "a zero timing: $1"
  echo "$1" | grep -q 'with dspreload' || fail "no figure at all: $1"
  # Every duration on a figure line: 3 significant figures at most, below 1000
  # in its unit (seconds excepted), or said to be no timing.
  echo "$1" | grep -E 'with dspreload|page cache:|in all' |
    grep -oE '(< )?[0-9][0-9.]* (ns|µs|ms|s)\b' | while read -r fig; do
      echo "$fig" | grep -qE '^(< )?([1-9][0-9]{0,2}|[1-9]\.[0-9]{1,2}|[1-9][0-9]\.[0-9]|0\.0*[1-9][0-9]{0,2}) (ns|µs|ms)$|^[0-9][0-9.]* s$' ||
        { echo "FAIL: '$fig' is no figure of launcher/figures.h: $1"; exit 1; }
      if echo "$fig" | grep -qE ' s$'; then
        [ "$(echo "$fig" | tr -cd '1-9' | wc -c)" -le 3 ] || { echo "FAIL: '$fig' has more than 3 figures"; exit 1; }
      fi
    done || exit 1
  # Every ratio: two significant figures.
  echo "$1" | grep -oE '\([^()]*[0-9]x\)' | while read -r r; do
    echo "$r" | grep -qE '^\((0\.0*[1-9][0-9]|[1-9]\.[0-9]|[1-9][0-9]0*)x\)$' ||
      { echo "FAIL: ratio '$r' is not to two figures: $1"; exit 1; }
  done || exit 1
  # A ratio only beside two timings.
  echo "$1" | grep -E 'too small to time|not measured' | grep -E '[0-9]x\)' &&
    fail "a ratio beside a side not timed: $1"
  echo "$1" | grep -qE '^(.* )?([0-9][0-9.]* (ns|µs|ms|s) (saved|lost) in all \([1-9] sections? timed on both sides\)|no section was timed on both sides)\.$' ||
    fail "no total line: $1"
}

# In the build tree: the doubles of libcudart and libcufile are found and timed.
out=$("$cmd" --stats-file "$dir/s.%p.json" demo 2>&1) || fail "demo exited $?: $out"
check_figures "$out"
echo "$out" | grep -E 'alloc \+ free \(libcudart test double\):' | grep -qE '[0-9]x\)$' ||
  fail "the libcudart double's alloc + free was not timed on both sides: $out"
# Its side without dspreload is without it: the shim, which answers dlsym on
# the library's own handle too, served both sides in one process before. It
# served only the runs with it (20 calls each, and one trial), and the
# process without it wrote no stats.
[ "$(ls "$dir" | grep -c '^s\.')" -eq 1 ] || fail "the side without the shim had it: $(ls "$dir")"
runs=$(echo "$out" | grep -A1 'libcudart test double' |
  sed -nE 's/.*(the figure with dspreload is|each figure) the mean of ([0-9]+) runs.*/\2/p')
served=$(grep -oE '"cuda_host_alloc_served":[0-9]+' "$dir"/s.*.json | cut -d: -f2)
[ "$served" -eq $((${runs:-1} * 20 + 1)) ] ||
  fail "$served cudaHostAlloc calls served, ${runs:-1} runs of 20 with the shim: $out"
rm -f "$dir"/s.*.json
echo "$out" | grep -qE 'cuFileRead \(libcufile test double\):' ||
  fail "the libcufile double was not used: $out"

# Installed (the command, the workload and the library side by side, no doubles),
# on a machine without CUDA: an empty DSPRELOAD_DEMO_* stands for it.
bin=$(dirname "$cmd")
cp "$cmd" "$bin/dspreload-demo" "$lib" "$dir/" || fail "copy"
out=$(DSPRELOAD_DEMO_CUDART= DSPRELOAD_DEMO_CUFILE= "$dir/dspreload" demo 2>&1) ||
  fail "installed demo exited $?: $out"
check_figures "$out"
echo "$out" | grep -qF "skipped: no libcudart found" || fail "CUDA section not skipped: $out"
echo "$out" | grep -qF "skipped: no libcufile found" || fail "cuFile section not skipped: $out"
echo "$out" | grep -q 'test double):' && fail "a double used when installed: $out"
echo "PASS"
