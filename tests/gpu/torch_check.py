"""GPU check, PyTorch: pinned memory from pin_memory() (torch's own
cudaHostAlloc without the shim, served by the shim with it), checked and
timed the same way in both runs:
- pinned, and a non-blocking H2D + D2H round trip intact;
- cudart().cudaHostRegister on a slice of a pinned tensor (callers such as
  ComfyUI do it): pinned memory already, so 712 as without the shim;
- H2D and D2H bandwidth from that memory (h2d_GBps, d2h_GBps);
- pin_memory() + torch._C._host_emptyCache() cycles: each really frees and
  pins again (pin_empty_cycle_s)."""
import time

import gpucheck as g

torch = g.need_torch_cuda()
n = 256 * g.MiB
t = torch.empty(n, dtype=torch.uint8).pin_memory()
g.check(t.is_pinned(), "pin_memory() result is pinned")
t.copy_(torch.arange(n, dtype=torch.int64).to(torch.uint8))
d = t.to("cuda", non_blocking=True)
back = torch.empty_like(t).pin_memory()
back.copy_(d, non_blocking=True)
torch.cuda.synchronize()
g.check(torch.equal(back, t), "non-blocking H2D then D2H round trip intact")

cudart = torch.cuda.cudart()
rc = cudart.cudaHostRegister(t[4096:].data_ptr(), g.MiB, 0)
code = int(rc[0] if isinstance(rc, tuple) else rc)
g.figure("cudaHostRegister_slice_rc", code, "code")
if code == 0:
    cudart.cudaHostUnregister(t[4096:].data_ptr())
if g.SHIM:
    g.check(code == 712, "cudaHostRegister on a slice of a served tensor answers 712")

dev = torch.empty(n, dtype=torch.uint8, device="cuda")
torch.cuda.synchronize()
for name, dst, src in (("h2d_GBps", dev, t), ("d2h_GBps", t, dev)):
    dst.copy_(src, non_blocking=True)  # warm
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(3):  # best of 3: one loop is a few tens of ms
        start = time.perf_counter()
        for _ in range(20):
            dst.copy_(src, non_blocking=True)
        torch.cuda.synchronize()
        best = min(best, time.perf_counter() - start)
    g.figure(name, 20 * n / best / 1e9, "GB/s")

x = torch.empty(64 * g.MiB, dtype=torch.uint8)
start = time.perf_counter()
for _ in range(50):
    y = x.pin_memory()
    del y
    torch._C._host_emptyCache()
g.figure("pin_empty_cycle_s", (time.perf_counter() - start) / 50, "s")
g.done("torch_check")
