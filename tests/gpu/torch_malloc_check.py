"""GPU check of malloc hints, PyTorch (run.sh: without the shim, then with it
and DSP_MALLOC_MIN=1M). torch.empty(n) on the CPU comes from posix_memalign;
with hints on it is born pinned, so pin_memory() finds it pinned and returns
the same storage: no copy, no power-of-two rounding. Torch alone pins 32 GiB
for a 20.4 GiB tensor (its host allocator rounds up).

pinned_GiB is the drop of MemAvailable across pin_memory(), an account the
shim does not keep itself; the baseline is taken after the CUDA context
exists (about 0.6 GiB), so the context is not counted."""
import gpucheck as g

torch = g.need_torch_cuda()
size = int(20.4 * g.GiB)
if g.mem_available() < 40 * g.GiB:
    g.not_run("needs 40 GiB of available memory (torch alone pins 32 GiB), %.1f GiB here"
              % (g.mem_available() / g.GiB))
avail0 = g.mem_available()
t = torch.empty(size // 4, dtype=torch.float32)
t[:: 1 << 20].fill_(1.0)  # touched sparsely, as a loader's buffer before it is filled
p = t.pin_memory()
torch.cuda.synchronize()
pinned = (avail0 - g.mem_available()) / g.GiB
same = p.data_ptr() == t.data_ptr()
g.figure("same_storage", int(same), "flag")
g.figure("pinned_GiB", pinned, "GiB")
g.check(p.is_pinned(), "the result of pin_memory() is pinned")
g.check(torch.equal(p[:: 1 << 20], t[:: 1 << 20]), "the pinned tensor holds the data")
if g.HINTS:
    s = g.shim_stats()
    g.figure("shim_pinned_GiB", s.get("pinned_bytes", 0) / g.GiB, "GiB")
    g.check(s.get("malloc_hinted", 0) >= 1, "torch.empty was hinted")
    g.check(same, "pin_memory() returns the same storage")
    g.check(pinned < 21, "pinning 20.4 GiB takes under 21 GiB")
else:
    g.check(not same, "torch alone: pin_memory() copies into pinned memory")
del p, t
g.done("torch_malloc_check")
