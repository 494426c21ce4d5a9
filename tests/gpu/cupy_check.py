"""GPU check, CuPy (run.sh: without the shim, then with it): CuPy's pinned
memory pool (cupy.cuda.alloc_pinned_memory: cudaHostAlloc(Portable) through
its statically linked cudart, i.e. cuMemHostAlloc in the driver) and a round
trip through the device. cupy_served_by_shim counts the pinned allocations
the shim served (0 until the driver-level hooks of the coverage issue)."""
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
g.figure("cupy_data_intact", int(intact), "flag")
g.check(intact, "pinned host to device and back intact")
if g.SHIM:
    g.figure("cupy_served_by_shim", g.shim_stats().get("cuda_host_alloc_served", 0) - before, "calls")
g.done("cupy_check")
