"""Run by tests/wheel/wheel.sh with the venv's python, once under
LD_PRELOAD=$(python -m dspreload --lib) DSP_MALLOC_MIN=1M ("preloaded") and
once without ("absent"): what dspreload.stats() says about a torch tensor of
8 MiB, born pinned through malloc hints (CPU-only torch cannot pin_memory())."""
import ctypes
import sys

import dspreload
import torch

mode = sys.argv[1]
before = dspreload.stats()
if mode == 'absent':
    if before is not None:
        sys.exit(f'dspreload.stats() without the shim: {before!r}, expected None')
    print('stats: None without the shim')
    sys.exit(0)

if not isinstance(before, dict) or before.get('version') != dspreload.__version__:
    sys.exit(f'dspreload.stats() under the shim: {before!r}, expected a dict of version '
             f'{dspreload.__version__}')
t = torch.ones(8 << 20, dtype=torch.uint8)  # 8 MiB: past DSP_MALLOC_MIN=1M
is_pinned = ctypes.CDLL(None).dsp_is_pinned
is_pinned.argtypes = (ctypes.c_void_p, ctypes.c_size_t)
if is_pinned(t.data_ptr(), t.numel()) != 1:
    sys.exit('the 8 MiB tensor is not pinned (dsp_is_pinned)')
after = dspreload.stats()
if after['malloc_hinted'] <= before['malloc_hinted']:
    sys.exit(f"malloc_hinted did not move: {before['malloc_hinted']} -> {after['malloc_hinted']}")
if after['malloc_hinted_bytes'] < before['malloc_hinted_bytes'] + (8 << 20):
    sys.exit(f"malloc_hinted_bytes grew by less than 8 MiB: {before['malloc_hinted_bytes']} -> "
             f"{after['malloc_hinted_bytes']}")
if int(t.sum()) != 8 << 20:
    sys.exit('the pinned tensor lost its contents')
print(f"stats: malloc_hinted {before['malloc_hinted']} -> {after['malloc_hinted']}, "
      f"the tensor pinned")
