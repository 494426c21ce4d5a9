#!/bin/sh
# tests/gpu/find_cuda.sh against the layouts the GPU machines may have: CUDA 13
# wheels (nvidia/cu13), CUDA 12 wheels (nvidia/cuda_runtime, nvidia/cufile),
# a toolkit under /usr/local/cuda, nvcc's own folder, and none at all.
here=$(cd "$(dirname "$0")" && pwd)
fail() { echo "FAIL: $*"; exit 1; }
t=$(mktemp -d) && trap 'rm -rf "$t"' EXIT
mk() { mkdir -p "$(dirname "$1")" && : >"$1"; }
# Nothing of the machine's own may answer: no nvcc, no CUDA_HOME, no real roots.
export PATH=/usr/bin:/bin DSP_GPU_CUDA_ROOTS=$t/none
unset CUDA_HOME
. "$here/find_cuda.sh"
expect() { # expect WHAT INC SO CUFILE
  find_cuda || fail "$1: nothing found"
  [ "$CUDA_INC" = "$2" ] || fail "$1: headers from '$CUDA_INC', not '$2' ($CUDA_FROM)"
  [ "$CUDART_SO" = "$3" ] || fail "$1: runtime '$CUDART_SO', not '$3' ($CUDA_FROM)"
  [ "$CUFILE_SO" = "$4" ] || fail "$1: cufile '$CUFILE_SO', not '$4'"
  echo "ok $1: $CUDA_FROM"
}

# CUDA 13 wheels: everything under nvidia/cu13.
s13=$t/site13
mk "$s13/nvidia/cu13/include/cuda_runtime_api.h"
mk "$s13/nvidia/cu13/lib/libcudart.so.13" && mk "$s13/nvidia/cu13/lib/libcufile.so.0"
DSP_GPU_SITE=$s13 expect cu13 "$s13/nvidia/cu13/include" "$s13/nvidia/cu13/lib/libcudart.so.13" \
  "$s13/nvidia/cu13/lib/libcufile.so.0"

# CUDA 12 wheels: a folder per library.
s12=$t/site12
mk "$s12/nvidia/cuda_runtime/include/cuda_runtime_api.h"
mk "$s12/nvidia/cuda_runtime/lib/libcudart.so.12" && mk "$s12/nvidia/cufile/lib/libcufile.so.0"
DSP_GPU_SITE=$s12 expect cu12 "$s12/nvidia/cuda_runtime/include" \
  "$s12/nvidia/cuda_runtime/lib/libcudart.so.12" "$s12/nvidia/cufile/lib/libcufile.so.0"

# A wheel with the runtime's library but no headers is passed over.
half=$t/half && mk "$half/nvidia/cu13/lib/libcudart.so.13"
DSP_GPU_SITE=$half:$s12 expect headerless-wheel-skipped "$s12/nvidia/cuda_runtime/include" \
  "$s12/nvidia/cuda_runtime/lib/libcudart.so.12" "$s12/nvidia/cufile/lib/libcufile.so.0"

# /usr/local/cuda: targets/x86_64-linux, the toolkit's real folders.
root=$t/usr/local/cuda
mk "$root/targets/x86_64-linux/include/cuda_runtime_api.h"
mk "$root/targets/x86_64-linux/lib/libcudart.so.13"
DSP_GPU_SITE=$t/empty DSP_GPU_CUDA_ROOTS=$root expect usr-local-cuda \
  "$root/targets/x86_64-linux/include" "$root/targets/x86_64-linux/lib/libcudart.so.13" ""

# nvcc on PATH wins over the wheels: its toolkit's include/ and lib64/.
tk=$t/cuda-13.0
mk "$tk/include/cuda_runtime_api.h" && mk "$tk/lib64/libcudart.so.13" && mk "$tk/bin/nvcc"
chmod +x "$tk/bin/nvcc"
PATH=$tk/bin:$PATH DSP_GPU_SITE=$s12 expect nvcc-first "$tk/include" "$tk/lib64/libcudart.so.13" \
  "$s12/nvidia/cufile/lib/libcufile.so.0"

# CUDA_HOME wins over everything.
PATH=$tk/bin:$PATH CUDA_HOME=$root DSP_GPU_SITE=$s13 expect cuda-home \
  "$root/targets/x86_64-linux/include" "$root/targets/x86_64-linux/lib/libcudart.so.13" \
  "$s13/nvidia/cu13/lib/libcufile.so.0"

# Nothing: find_cuda says so.
DSP_GPU_SITE=$t/empty find_cuda && fail "found a runtime where there is none: $CUDART_SO"
echo PASS
