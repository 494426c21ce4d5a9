#!/usr/bin/env bash
# The GPU check of the CUDA layer, in one call on a machine with an NVIDIA GPU
# (the device tool runs it from the repository root). Builds the shim, then
# with and without it: the C program against the real driver (1000 cycles of
# 64 MiB cudaHostAlloc+cudaFreeHost, first allocation of 8 GiB, data and
# attribute checks, H2D bandwidth) and, where PyTorch is installed, the torch
# checks (is_pinned of tensors and slices, non-blocking copies, bandwidth
# against torch's own pinned memory, pin_memory+emptyCache cycles,
# cudart().cudaHostRegister on a slice; malloc hints: torch.empty(20.4 GiB)
# .pin_memory() returns the same storage, pinned under 21 GiB against torch's
# 32 GiB), and the cuFile check (a 1 GiB file read by cuFileRead into pinned
# host and device memory with the machine's libcufile, verified). Prints every
# figure and the ratios;
# copy the output into docs/gpu-results.md with the date.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || { echo "no GPU"; exit 1; }
# Plain cc: the GPU machine may have no Meson and no network to fetch it.
lib=$out/libdspreload.so
cc -O2 -std=c11 -shared -fPIC -fvisibility=hidden -D_GNU_SOURCE -Iinclude src/*.c preload/*.c io/*.c \
  -Wl,--version-script=preload/libdspreload.map -Wl,-z,nodelete -lpthread -ldl -o "$lib" || exit 1
cuda=${CUDA_HOME:-/usr/local/cuda}
cudart_dir=$(python3 -c 'import nvidia.cuda_runtime, os; print(os.path.join(os.path.dirname(nvidia.cuda_runtime.__file__), "lib"))' 2>/dev/null || echo "$cuda/lib64")
cc -O2 -I"$cuda/include" tests/gpu/cuda_cycle.c -L"$cudart_dir" -l:libcudart.so.13 -Wl,-rpath,"$cudart_dir" -o "$out/cuda_cycle" 2>/dev/null ||
cc -O2 -I"$cuda/include" tests/gpu/cuda_cycle.c -L"$cudart_dir" -l:libcudart.so.12 -Wl,-rpath,"$cudart_dir" -o "$out/cuda_cycle" || exit 1
echo "== C, without the shim (100 cycles: each is a real pin and unpin)"
"$out/cuda_cycle" 100 8 | tee "$out/c_plain.txt"
echo "== C, with the shim (1000 cycles)"
LD_PRELOAD=$lib DSP_STATS=1 "$out/cuda_cycle" 1000 8 | tee "$out/c_shim.txt"
python3 - "$out/c_plain.txt" "$out/c_shim.txt" <<'PY'
import sys
a, b = ({l.split()[0]: float(l.split()[1]) for l in open(f) if len(l.split()) == 3} for f in sys.argv[1:])
print("ratio cycle_64MiB %.0fx (goal >= 100x)" % (a["cycle_64MiB"] / b["cycle_64MiB"]))
k = [x for x in a if x.startswith("first_alloc")][0]
print("ratio %s %.2fx (goal >= 3x)" % (k, a[k] / b[k]))
print("ratio h2d %.3f (goal >= 0.98)" % (b["h2d_GBps"] / a["h2d_GBps"]))
PY
if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
  echo "== torch, without the shim"; python3 tests/gpu/torch_check.py | tee "$out/t_plain.txt"
  echo "== torch, with the shim"; LD_PRELOAD=$lib DSP_STATS=1 python3 tests/gpu/torch_check.py | tee "$out/t_shim.txt"
  python3 - "$out/t_plain.txt" "$out/t_shim.txt" <<'PY'
import sys
a, b = ({l.split()[0]: float(l.split()[1]) for l in open(f) if len(l.split()) == 3 and l.split()[0] != "FAIL"} for f in sys.argv[1:])
print("ratio h2d vs torch-native pinned %.3f (goal >= 0.98)" % (b["h2d_GBps"] / a["h2d_GBps"]))
print("ratio d2h vs torch-native pinned %.3f (goal >= 0.98)" % (b["d2h_GBps"] / a["d2h_GBps"]))
print("ratio pin_memory+emptyCache cycle %.2fx" % (a["pin_empty_cycle"] / b["pin_empty_cycle"]))
PY
  # Malloc hints (docs/malloc-hints.md): a 20.4 GiB torch.empty born pinned.
  echo "== torch malloc hints, without the shim"; python3 tests/gpu/torch_malloc_check.py | tee "$out/m_plain.txt"
  echo "== torch malloc hints, with the shim (DSP_MALLOC_MIN=1M)"
  LD_PRELOAD=$lib DSP_MALLOC_MIN=1M DSP_STATS=1 python3 tests/gpu/torch_malloc_check.py | tee "$out/m_shim.txt"
else
  echo "== torch with CUDA not available: torch checks skipped"
fi
# libcufile.so.0 and libcudart from the NVIDIA wheels (their folders differ
# between CUDA 12 and 13 wheels: search them).
find_nvidia_lib() {
  python3 - "$1" <<'PY' 2>/dev/null
import os, re, sys
import nvidia
pat = re.compile(sys.argv[1])
for root in nvidia.__path__:
    for d, _, files in sorted(os.walk(root)):
        for f in sorted(files):
            if pat.fullmatch(f): print(os.path.join(d, f)); raise SystemExit
PY
}
cufile_so=$(find_nvidia_lib 'libcufile\.so\.0')
cudart_so=$(ls "$cudart_dir"/libcudart.so.1[0-9] 2>/dev/null | head -1)
[ -n "$cudart_so" ] || cudart_so=$(find_nvidia_lib 'libcudart\.so\.1[0-9]')
if [ -n "$cufile_so" ] && [ -n "$cudart_so" ] &&
   cc -O2 -std=c11 -D_GNU_SOURCE tests/gpu/cufile_check.c "$cufile_so" "$cudart_so" \
     -Wl,-rpath,"$(dirname "$cufile_so")":"$(dirname "$cudart_so")" -o "$out/cufile_check"; then
  file=${DSP_GPU_CUFILE_FILE:-/tmp/dsp_cufile_1g}
  # Compat mode: no nvidia-fs on these machines; force it where cuFile reads the variable.
  export CUFILE_FORCE_COMPAT_MODE=true
  echo "== cuFile, without the shim"; "$out/cufile_check" "$file" | tee "$out/f_plain.txt"
  echo "== cuFile, with the shim"; LD_PRELOAD=$lib DSP_STATS=1 "$out/cufile_check" "$file" | tee "$out/f_shim.txt"
  rm -f "$file"
  python3 - "$out/f_plain.txt" "$out/f_shim.txt" <<'PY'
import sys
a, b = ({l.split()[0]: float(l.split()[1]) for l in open(f) if l.startswith("cufile_")} for f in sys.argv[1:])
for k in ("cufile_host_GBps", "cufile_device_GBps"):
    if k in a and k in b: print("ratio %s %.2fx (shim / without)" % (k, b[k] / a[k]))
PY
else
  echo "== libcufile.so.0 or libcudart not found in the NVIDIA wheels (or no build): cuFile check skipped"
fi
