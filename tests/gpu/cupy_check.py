"""GPU check, CuPy (run.sh: without the shim, then with it): CuPy's pinned
memory pool (cupy.cuda.alloc_pinned_memory: cudaHostAlloc(Portable) through
its statically linked cudart, i.e. cuMemHostAlloc in the driver) and a round
trip through the device. cupy_served_by_shim counts the pinned allocations
the shim served: through the driver-level hooks (cuGetProcAddress_v2, issue
15), every one of the three allocations below, two of them through a
PinnedMemoryPool."""
import gpucheck as g

try:
    import cupy
    import numpy as np
except ImportError as e:
    g.not_run("no cupy (%s)" % e)
try:
    if cupy.cuda.runtime.getDeviceCount() < 1:
        g.not_run("cupy sees no device")
except cupy.cuda.runtime.CUDARuntimeError as e:
    g.not_run("cupy: %s" % e)
before = g.shim_stats().get("cuda_host_alloc_served", 0)
n = 64 * g.MiB
pool = cupy.cuda.PinnedMemoryPool()
cupy.cuda.set_pinned_memory_allocator(pool.malloc)
mem = cupy.cuda.alloc_pinned_memory(n)
h = np.frombuffer(mem, dtype=np.uint8, count=n)
h[:] = np.arange(n, dtype=np.uint64).astype(np.uint8)
d = cupy.empty(n, dtype=cupy.uint8)
d.set(h)
back_mem = cupy.cuda.alloc_pinned_memory(n)
back = np.frombuffer(back_mem, dtype=np.uint8, count=n)
d.get(out=back)
cupy.cuda.runtime.deviceSynchronize()
intact = bool(np.array_equal(back, h))
# Outside any pool: CuPy's PinnedMemory, freed with cudaFreeHost at once.
direct = cupy.cuda.PinnedMemory(n)
view = np.frombuffer(cupy.cuda.PinnedMemoryPointer(direct, 0), dtype=np.uint8, count=n)
view[:] = 7
d.set(view)
intact = intact and bool((d.get() == 7).all())
del view, direct
g.figure("cupy_data_intact", int(intact), "flag")
g.check(intact, "pinned host to device and back intact")
if g.SHIM:
    served = g.shim_stats().get("cuda_host_alloc_served", 0) - before
    g.figure("cupy_served_by_shim", served, "calls")
    g.figure("cupy_driver_served", g.shim_stats().get("cuda_driver_served", 0), "calls")
    g.check(served >= 3, "CuPy's pinned allocations served by the shim")
g.done("cupy_check")
