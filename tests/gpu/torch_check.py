"""GPU check, PyTorch side (tests/gpu/run.sh runs it with and without the shim).

Prints `name value unit` lines and PASS, or FAIL lines and exits 1.
"""
import os
import sys
import time

import torch

shim = "libdspreload" in os.environ.get("LD_PRELOAD", "")
fail = []


def check(cond, what):
    if not cond:
        fail.append(what)
        print("FAIL", what, flush=True)


n = 256 << 20  # bytes
t = torch.empty(n, dtype=torch.uint8).pin_memory()
check(t.is_pinned(), "pin_memory() result is pinned")
check(t[12345:].is_pinned(), "a slice of a pinned tensor is pinned")
t.copy_(torch.arange(n, dtype=torch.int64).to(torch.uint8))
d = t.to("cuda", non_blocking=True)
back = torch.empty_like(t).pin_memory()
back.copy_(d, non_blocking=True)
torch.cuda.synchronize()
check(torch.equal(back, t), "non-blocking H2D then D2H round trip intact")

# cudart().cudaHostRegister on a slice of a pinned tensor (ComfyUI-style callers).
cudart = torch.cuda.cudart()
rc = cudart.cudaHostRegister(t[4096:].data_ptr(), 1 << 20, 0)
code = int(rc) if not isinstance(rc, tuple) else int(rc[0])
print("cudaHostRegister_slice_rc", code, "code")
if shim:
    check(code == 0, "cudaHostRegister on a slice of a shim-served tensor succeeds")
    cudart.cudaHostUnregister(t[4096:].data_ptr())

# Bandwidth from pinned memory.
dev = torch.empty(n, dtype=torch.uint8, device="cuda")
torch.cuda.synchronize()
start = time.perf_counter()
for _ in range(20):
    dev.copy_(t, non_blocking=True)
torch.cuda.synchronize()
print("h2d_GBps", round(20 * n / (time.perf_counter() - start) / 1e9, 2), "GB/s")
start = time.perf_counter()
for _ in range(20):
    t.copy_(dev, non_blocking=True)
torch.cuda.synchronize()
print("d2h_GBps", round(20 * n / (time.perf_counter() - start) / 1e9, 2), "GB/s")

# pin_memory() + emptyCache cycles: every cycle really frees and re-pins.
x = torch.empty(64 << 20, dtype=torch.uint8)
start = time.perf_counter()
for _ in range(50):
    y = x.pin_memory()
    del y
    torch._C._host_emptyCache()
print("pin_empty_cycle", round((time.perf_counter() - start) / 50 * 1e3, 3), "ms")

print("PASS" if not fail else "FAIL %d checks" % len(fail))
sys.exit(1 if fail else 0)
