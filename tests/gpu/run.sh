#!/usr/bin/env bash
# The GPU check, in one call on a machine with an NVIDIA GPU (the device tool
# runs it from the repository root, with $OUT a folder that comes back):
#
#   tests/gpu/run.sh              the real check (under 8 minutes)
#   tests/gpu/run.sh --rehearse   the same script without a GPU: the project's
#                                 test doubles stand in for libcudart and
#                                 libcufile, a stand-in nvidia-smi for the tool,
#                                 sizes are small (tests/gpu/rehearse.sh, CI)
#
# Diagnostics first (the facts needed to read a failure), then every part, each
# on its own under `timeout` and with and without the shim: a part that fails
# is reported and the script goes on. What comes back: $OUT/gpu-log.txt (the
# whole output) and $OUT/gpu-results.json (every figure, goal and verdict),
# nothing else; the last lines of the output are the summary table. Record a
# real run in docs/gpu-results.md (its format is there).
set -uo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD
rehearse=0
case "${1:-}" in
--rehearse) rehearse=1 ;;
"") ;;
*) echo "usage: tests/gpu/run.sh [--rehearse]" >&2; exit 2 ;;
esac
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
log=$out/gpu-log.txt
results=$out/gpu-results.json
work=$(mktemp -d) # binaries and the parts' own outputs: never in $OUT
trap 'rm -rf "$work"' EXIT
records=$work/records.tsv && : >"$records"
start=$(date +%s)
# The whole run, summary included, within the device tool's 10-minute call and
# the 8 minutes the issue gives it.
py=${DSP_GPU_PYTHON:-python3} # the interpreter with torch, jax, cupy
budget=${DSP_GPU_BUDGET_S:-450}
[ $rehearse -eq 0 ] || budget=${DSP_GPU_BUDGET_S:-300}
exec > >(tee "$log") 2>&1
tee_pid=$!

section() { printf '\n=== %s (%ss)\n' "$*" "$(($(date +%s) - start))"; }

# --- the rehearsal's stand-ins -------------------------------------------------
if [ $rehearse -eq 1 ]; then
  fake=$work/fake
  mkdir -p "$fake/bin" "$fake/site/nvidia/cu13/lib" "$fake/site/nvidia/cu13/include"
  # The checks declare what they call (tests/gpu/gpu_check.h); the header is
  # here for find_cuda, which takes a layout only with its header.
  echo "/* rehearsal: tests/gpu/gpu_check.h declares what the checks call */" \
    >"$fake/site/nvidia/cu13/include/cuda_runtime_api.h"
  # The driver double first: the runtime double dlopens it from its own
  # folder ($ORIGIN), as the real runtime finds libcuda.so.1.
  cc -O2 -shared -fPIC -D_GNU_SOURCE -Wl,-soname,libcuda.so.1 -Iio -Itests/cuda \
    -Wl,--version-script=tests/cuda/fake_cuda.map -Wl,-Bsymbolic-functions tests/cuda/fake_cuda.c tests/cuda/fake_pin.c -lpthread -ldl \
    -o "$fake/site/nvidia/cu13/lib/libcuda.so.1" || { echo "FAIL: cannot build the libcuda double"; exit 1; }
  cc -O2 -shared -fPIC -D_GNU_SOURCE -Wl,-soname,libcudart.so.13 -Iio -Itests/cuda -DFAKECUDA_VERSION=13000 \
    -Wl,--version-script=tests/cuda/fake_cudart.map tests/cuda/fake_cudart.c tests/cuda/fake_device.c -lpthread -ldl \
    -Wl,-rpath,'$ORIGIN' -o "$fake/site/nvidia/cu13/lib/libcudart.so.13" || { echo "FAIL: cannot build the libcudart double"; exit 1; }
  cc -O2 -shared -fPIC -D_GNU_SOURCE -Wl,-soname,libcufile.so.0 -Iio -Itests/cuda tests/cufile/fake_cufile.c \
      -L"$fake/site/nvidia/cu13/lib" -l:libcuda.so.1 -Wl,-rpath,"$fake/site/nvidia/cu13/lib" -lpthread \
      -o "$fake/site/nvidia/cu13/lib/libcufile.so.0" || echo "(no libcufile double: the cuFile part will say so)"
  cat >"$fake/bin/nvidia-smi" <<'SH'
#!/bin/sh
# Stand-in for the rehearsal (tests/gpu/run.sh --rehearse).
case "$*" in
*--query-gpu*) echo "NVIDIA H200 (rehearsal double), 580.00, 143771 MiB" ;;
*) echo "NVIDIA-SMI 580.00 (rehearsal double)  Driver Version: 580.00  CUDA Version: 13.0" ;;
esac
SH
  chmod +x "$fake/bin/nvidia-smi"
  export PATH=$fake/bin:$PATH DSP_GPU_SITE=$fake/site DSP_GPU_CUDA_ROOTS=$work/none DSP_GPU_NVCC=none
  unset CUDA_HOME
  nvcc_off=1
fi

# --- diagnostics ---------------------------------------------------------------
section "diagnostics"
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "mode: $([ $rehearse -eq 1 ] && echo rehearsal || echo real)"
  echo "gpu: $(timeout 30 nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -4 | tr '\n' ';')"
  # Off, every CUDA start-up may take seconds (the programs print init_s).
  echo "persistence mode: $(timeout 30 nvidia-smi --query-gpu=persistence_mode --format=csv,noheader 2>&1 | head -1)"
  echo "cc: $(cc --version 2>&1 | head -1)"
  echo "kernel: $(uname -r)"
  echo "cpus: $(nproc); memory: $(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)"
  echo "nvcc: $([ -z "${nvcc_off:-}" ] && command -v nvcc >/dev/null && nvcc --version | tail -1 || echo none)"
  echo "python: $py $("$py" -c 'import sys; print(sys.version.split()[0])' 2>&1)"
  for m in torch jax cupy; do
    echo "$m: $(timeout 60 "$py" -c "import $m; print($m.__version__)" 2>/dev/null || echo absent)"
  done
  echo "torch cuda: $(timeout 60 "$py" -c 'import torch; print(torch.version.cuda, torch.cuda.is_available())' 2>/dev/null || echo absent)"
  echo "ulimit -l: $(ulimit -l)"
  echo "CapEff: $(awk '/CapEff/ {print $2}' /proc/self/status) (CAP_IPC_LOCK is bit 14)"
  echo "THP: enabled $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null), defrag $(cat /sys/kernel/mm/transparent_hugepage/defrag 2>/dev/null), shmem $(cat /sys/kernel/mm/transparent_hugepage/shmem_enabled 2>/dev/null)"
  echo "vm.max_map_count: $(cat /proc/sys/vm/max_map_count)"
  # NUMA placement (issue 33): the nodes, and each GPU's (sysfs names the PCI
  # domain with 4 digits, nvidia-smi with 8).
  echo "numa nodes: $(cat /sys/devices/system/node/online 2>/dev/null || echo none)"
  for b in $(timeout 30 nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader 2>/dev/null |
    grep -oE '^[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9]$'); do
    b=$(echo "${b: -12}" | tr A-F a-f)
    echo "gpu $b numa node: $(cat "/sys/bus/pci/devices/$b/numa_node" 2>/dev/null || echo unknown)"
  done
  cg=$(awk -F: '$2 ~ /memory/ || $2 == "" {print $3; exit}' /proc/self/cgroup)
  echo "cgroup: ${cg:-?}; memory.max $(cat "/sys/fs/cgroup$cg/memory.max" 2>/dev/null || cat "/sys/fs/cgroup/memory$cg/memory.limit_in_bytes" 2>/dev/null || echo '?')"
} | tee "$work/diag.txt"
. tests/gpu/find_cuda.sh
if find_cuda; then
  echo "CUDA runtime: $CUDART_SO, headers $CUDA_INC (from $CUDA_FROM)"
else
  echo "CUDA runtime: none found (CUDA_HOME, nvcc, the nvidia wheels, /usr/local/cuda)"
fi
echo "libcufile: ${CUFILE_SO:-none found}"
echo "cuda: ${CUDART_SO:-none} (${CUDA_FROM:-})" >>"$work/diag.txt"

# --- the parts -----------------------------------------------------------------
# record PART VARIANT STATUS SECONDS FILE: the figures (NAME VALUE UNIT lines)
# of FILE go with the part's verdict into the results.
record() {
  local figs
  figs=$(awk 'NF == 3 && $2 ~ /^-?[0-9.]+(e[-+]?[0-9]+)?$/ {printf "%s=%s=%s ", $1, $2, $3}' "$5" 2>/dev/null)
  printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$figs" >>"$records"
}

# part NAME VARIANT TIMEOUT CMD...: runs it with what time is left (keeping 20 s
# for the summary), its output in the log, its verdict recorded: PASS (exit 0),
# NOT RUN (exit 77, or no time left), TIMEOUT, FAIL.
part() {
  local name=$1 variant=$2 limit=$3
  shift 3
  local left=$((budget - 20 - ($(date +%s) - start)))
  local f=$work/$name.$variant.txt
  section "$name, $variant"
  if [ $left -lt 5 ]; then
    echo "NOT RUN: no time left in the ${budget}s budget" | tee "$f"
    record "$name" "$variant" "NOT RUN" 0 "$f"
    return
  fi
  local t0 rc status cut=0
  [ $limit -le $left ] || { limit=$left; cut=1; }
  t0=$(date +%s)
  timeout -k 5 "$limit" "$@" >"$f" 2>&1
  rc=$?
  cat "$f"
  case $rc in
  0) status=PASS ;;
  77) status="NOT RUN" ;;
  124 | 137)
    if [ $cut -eq 1 ]; then # stopped by the budget, not by its own limit
      status="NOT RUN"; echo "NOT RUN: stopped after ${limit}s, the end of the ${budget}s budget"
    else
      status=TIMEOUT; echo "TIMEOUT after ${limit}s"
    fi ;;
  *) status=FAIL; echo "(exit $rc)" ;;
  esac
  record "$name" "$variant" "$status" "$(($(date +%s) - t0))" "$f"
}

# not_run NAME VARIANT WHY
not_run() {
  section "$1, $2"
  echo "NOT RUN: $3" | tee "$work/$1.$2.txt"
  record "$1" "$2" "NOT RUN" 0 "$work/$1.$2.txt"
}

# Sizes: the real check's, or the rehearsal's (the doubles' memory is this
# machine's, a CI runner's).
if [ $rehearse -eq 1 ]; then
  gib_big=1 cycles=20 reg_sizes="64M 1G" sem_gib=0.25 cufile_mib=64
else
  gib_big=8 cycles=100 reg_sizes="1G 16G" sem_gib=8 cufile_mib=1024
fi

section "build"
# Plain cc: the GPU machine may have no Meson and no network to fetch it.
lib=$work/libdspreload.so
if ! cc -O2 -std=c11 -shared -fPIC -fvisibility=hidden -D_GNU_SOURCE -Iinclude -Isrc -Iio -Ipreload \
  src/*.c preload/*.c io/*.c \
  -Wl,--version-script=preload/libdspreload.map -Wl,-z,nodelete -lpthread -ldl -o "$lib" 2>"$work/build.txt"; then
  cat "$work/build.txt"
  echo "FAIL: the shim does not build; nothing else can run"
  lib=
fi
# The build is a part of its own: without the shim, or (for real) without a
# CUDA runtime, every other part says NOT RUN, and the run must not say OK.
build_status=PASS
[ -n "$lib" ] || build_status=FAIL
if [ $rehearse -eq 0 ] && [ -z "${CUDART_SO:-}" ]; then
  echo "FAIL: no CUDA runtime found: the CUDA parts cannot run"; build_status=FAIL
fi
record build plain "$build_status" 0 "$work/build.txt"
record build shim "$build_status" 0 "$work/build.txt"
built=" "
if [ -n "$lib" ] && [ -n "${CUDART_SO:-}" ]; then
  for prog in cuda_cycle register_speed cuda_semantics; do
    [ -f "tests/gpu/$prog.c" ] || { echo "tests/gpu/$prog.c missing"; continue; }
    if cc -O2 -std=c11 -D_GNU_SOURCE -I"$CUDA_INC" "tests/gpu/$prog.c" -L"$CUDART_DIR" \
      -l:"$(basename "$CUDART_SO")" -Wl,-rpath,"$CUDART_DIR" -lpthread -o "$work/$prog" 2>"$work/cc.$prog.txt"; then
      built="$built$prog "
    else
      echo "FAIL: tests/gpu/$prog.c does not build:"; cat "$work/cc.$prog.txt"
    fi
  done
  if [ -n "${CUFILE_SO:-}" ] &&
    cc -O2 -std=c11 -D_GNU_SOURCE -Iio tests/gpu/cufile_check.c "$CUFILE_SO" "$CUDART_SO" \
      -Wl,-rpath,"$(dirname "$CUFILE_SO")":"$CUDART_DIR" -o "$work/cufile_check" 2>"$work/cc.cufile.txt"; then
    built="${built}cufile_check "
  elif [ -n "${CUFILE_SO:-}" ]; then
    echo "FAIL: tests/gpu/cufile_check.c does not build:"; cat "$work/cc.cufile.txt"
  fi
fi
echo "built:$built"

# c_part NAME PROG TIMEOUT ARGS...: without the shim, then with it.
c_part() {
  local name=$1 prog=$2 limit=$3
  shift 3
  if [ -z "$lib" ] || [ -z "${CUDART_SO:-}" ]; then
    not_run "$name" plain "no shim or no CUDA runtime"; not_run "$name" shim "no shim or no CUDA runtime"
  elif [ "${built#* $prog }" = "$built" ]; then
    not_run "$name" plain "tests/gpu/$prog.c did not build"; not_run "$name" shim "tests/gpu/$prog.c did not build"
  else
    part "$name" plain "$limit" env ${C_PLAIN_ENV:-} "$work/$prog" "$@"
    part "$name" shim "$limit" env LD_PRELOAD="$lib" DSP_STATS=1 ${C_SHIM_ENV:-} "$work/$prog" "$@"
  fi
}

c_part cycle cuda_cycle 90 --cycles "$cycles" --big-gib "$gib_big"
# Malloc hints on for the semantics: the hazards of issue 13 come from them.
for mode in freehost_wait nonblocking_reuse d2h_hinted fork_time capture numa; do
  C_SHIM_ENV="DSP_MALLOC_MIN=1M" c_part "semantics_$mode" cuda_semantics 60 "$mode" --gib "$sem_gib"
done
c_part register register_speed 90 $reg_sizes

# Python parts: each exits 77 (NOT RUN) where what it needs is missing.
py_part() {
  local name=$1 script=$2 limit=$3 shim_env=$4
  shift 4
  if [ -z "$lib" ]; then
    not_run "$name" plain "no shim"; not_run "$name" shim "no shim"; return
  fi
  part "$name" plain "$limit" "$py" "tests/gpu/$script" "$@"
  part "$name" shim "$limit" env LD_PRELOAD="$lib" DSP_STATS=1 $shim_env "$py" "tests/gpu/$script" "$@"
}
py_part torch torch_check.py 90 ""
py_part torch_hints torch_malloc_check.py 120 "DSP_MALLOC_MIN=1M"
py_part torch_loader torch_loader_check.py 90 ""
py_part torch_capture torch_capture_check.py 60 "DSP_MALLOC_MIN=1M"
py_part cupy cupy_check.py 60 ""
py_part jax jax_check.py 90 ""

# cuFile: in a folder where O_DIRECT works (/tmp may be tmpfs).
cufile_dir=
for d in ${DSP_GPU_CUFILE_DIR:-} /var/tmp "$repo" "${HOME:-/root}" /tmp; do
  [ -d "$d" ] && [ -w "$d" ] || continue
  if dd if=/dev/zero of="$d/.dsp_odirect_probe" bs=4096 count=1 oflag=direct status=none 2>/dev/null; then
    rm -f "$d/.dsp_odirect_probe"; cufile_dir=$d; break
  fi
  rm -f "$d/.dsp_odirect_probe"
done
echo "cuFile folder: ${cufile_dir:-none where O_DIRECT works}"
if [ "${built#* cufile_check }" = "$built" ]; then
  why="cufile_check did not build"
  [ -n "${CUFILE_SO:-}" ] || why="no libcufile.so.0"
  [ -n "$lib" ] && [ -n "${CUDART_SO:-}" ] || why="no shim or no CUDA runtime"
  not_run cufile plain "$why"; not_run cufile shim "$why"
elif [ -z "$cufile_dir" ]; then
  not_run cufile plain "no writable folder where O_DIRECT works"; not_run cufile shim "no folder"
else
  # Compat mode: no nvidia-fs on these machines; force it where cuFile reads the variable.
  export CUFILE_FORCE_COMPAT_MODE=true
  f=$cufile_dir/dsp_cufile_check.bin
  # From $work: libcufile writes cufile.log into the current folder.
  part cufile plain 90 env -C "$work" "$work/cufile_check" "$f" "$cufile_mib"
  part cufile shim 90 env -C "$work" LD_PRELOAD="$lib" DSP_STATS=1 "$work/cufile_check" "$f" "$cufile_mib"
  rm -f "$f"
fi

# --- results and summary -------------------------------------------------------
section "summary"
python3 tests/gpu/summary.py "$records" "$work/diag.txt" "$results" "$rehearse" "$(($(date +%s) - start))"
rc=$?
exec >&- 2>&-
wait $tee_pid # the log complete before the call returns
exit $rc
