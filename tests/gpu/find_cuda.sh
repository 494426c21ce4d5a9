# Sourced by tests/gpu/run.sh (and tests/gpu/layout.sh): finds the CUDA
# runtime's headers and library, and libcufile, wherever this machine keeps
# them. Sets CUDA_INC (a folder with cuda_runtime_api.h), CUDART_SO (the
# libcudart.so.N file), CUDART_DIR (its folder), CUDA_FROM (which layout),
# CUFILE_SO (libcufile.so.0, or empty). Returns 1 when no runtime is found.
#
# Where, in this order (the first that has both the header and the library):
#   1. $CUDA_HOME;
#   2. nvcc's folder (unless DSP_GPU_NVCC=none): $(dirname nvcc)/.., with include/ and lib64/ (a
#      toolkit), include/ and lib/ (nvcc from a wheel) or
#      targets/x86_64-linux/{include,lib};
#   3. the NVIDIA wheels of $DSP_GPU_PYTHON (python3; or the folders in $DSP_GPU_SITE, each
#      holding nvidia/): CUDA 13 wheels put every library under nvidia/cu13/
#      {include,lib}; CUDA 12 wheels one folder per library
#      (nvidia/cuda_runtime/{include,lib}, nvidia/cufile/lib);
#   4. /usr/local/cuda (or the folders in $DSP_GPU_CUDA_ROOTS).
# libcufile.so.0 is looked for in the chosen runtime's folder, then in every
# wheel folder, then in the roots.

# The site folders that hold the nvidia/ namespace package.
gpu_sites() {
  if [ -n "${DSP_GPU_SITE:-}" ]; then
    echo "$DSP_GPU_SITE" | tr ':' '\n'
    return
  fi
  "${DSP_GPU_PYTHON:-python3}" - <<'PY' 2>/dev/null
import os
try:
    import nvidia
except ImportError:
    raise SystemExit
for p in nvidia.__path__:
    print(os.path.dirname(p))
PY
}

# cuda_candidate INC LIBDIR FROM: takes the pair when both are there.
cuda_candidate() {
  [ -z "${CUDART_SO:-}" ] || return 0
  [ -f "$1/cuda_runtime_api.h" ] || return 0
  local so
  for so in "$2"/libcudart.so.1[0-9]; do
    [ -e "$so" ] || continue
    CUDA_INC=$1 CUDART_SO=$so CUDART_DIR=$2 CUDA_FROM=$3
    return 0
  done
}

# cuda_root DIR FROM: a toolkit folder (include/ and lib64/, or targets/).
cuda_root() {
  cuda_candidate "$1/include" "$1/lib64" "$2"
  cuda_candidate "$1/include" "$1/lib" "$2" # nvcc from a wheel: nvidia/cu13/bin/nvcc
  cuda_candidate "$1/targets/x86_64-linux/include" "$1/targets/x86_64-linux/lib" "$2"
}

find_cuda() {
  CUDA_INC= CUDART_SO= CUDART_DIR= CUDA_FROM= CUFILE_SO=
  local site root nvcc so
  [ -z "${CUDA_HOME:-}" ] || cuda_root "$CUDA_HOME" "CUDA_HOME=$CUDA_HOME"
  if [ "${DSP_GPU_NVCC:-}" != none ] && nvcc=$(command -v nvcc 2>/dev/null); then
    root=$(cd "$(dirname "$(readlink -f "$nvcc")")/.." && pwd)
    cuda_root "$root" "nvcc ($nvcc)"
  fi
  local sites
  sites=$(gpu_sites)
  for site in $sites; do
    cuda_candidate "$site/nvidia/cu13/include" "$site/nvidia/cu13/lib" "CUDA 13 wheel ($site/nvidia/cu13)"
    cuda_candidate "$site/nvidia/cuda_runtime/include" "$site/nvidia/cuda_runtime/lib" \
      "CUDA 12 wheel ($site/nvidia/cuda_runtime)"
  done
  local roots=${DSP_GPU_CUDA_ROOTS:-/usr/local/cuda}
  for root in $(echo "$roots" | tr ':' ' '); do cuda_root "$root" "$root"; done
  # libcufile: beside the runtime, then the wheels, then the roots.
  local dirs="$CUDART_DIR"
  for site in $sites; do dirs="$dirs $site/nvidia/cu13/lib $site/nvidia/cufile/lib"; done
  for root in $(echo "$roots" | tr ':' ' '); do dirs="$dirs $root/lib64 $root/targets/x86_64-linux/lib"; done
  for root in $dirs; do
    if [ -e "$root/libcufile.so.0" ]; then CUFILE_SO=$root/libcufile.so.0; break; fi
  done
  [ -n "$CUDART_SO" ]
}
