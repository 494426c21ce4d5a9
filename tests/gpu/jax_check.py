"""GPU check, JAX (run.sh: without the shim, then with it): an array put in
pinned host memory (memory_kind="pinned_host": XLA's cuMemHostAlloc, reached
through dlopen + dlsym of libcuda.so.1), moved to the device and back, the
data checked. jax_served_by_shim counts the pinned allocations the shim
served through the driver-level hooks (dlsym on libcuda's handle, issue 15):
at least one."""
import os

import gpucheck as g

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # leave the device's memory alone
try:
    import jax
    import numpy as np
except ImportError as e:
    g.not_run("no jax (%s)" % e)
try:
    gpus = jax.devices("gpu")
except RuntimeError as e:
    g.not_run("jax has no GPU backend (%s)" % e)
before = g.shim_stats().get("cuda_host_alloc_served", 0)
dev = gpus[0]
x = np.arange(16 * g.MiB, dtype=np.float32)
try:
    host = jax.device_put(x, jax.sharding.SingleDeviceSharding(dev, memory_kind="pinned_host"))
except (ValueError, RuntimeError) as e:
    g.not_run("this jax has no pinned_host memory kind (%s)" % e)
on_dev = jax.device_put(host, jax.sharding.SingleDeviceSharding(dev, memory_kind="device"))
back = jax.device_put(on_dev * 2, jax.sharding.SingleDeviceSharding(dev, memory_kind="pinned_host"))
back.block_until_ready()
intact = bool(np.array_equal(np.asarray(back), x * 2))
g.figure("jax_memory_kind", 1 if host.sharding.memory_kind == "pinned_host" else 0, "flag")
g.figure("jax_data_intact", int(intact), "flag")
g.check(intact, "pinned_host to device and back intact")
if g.SHIM:
    served = g.shim_stats().get("cuda_host_alloc_served", 0) - before
    g.figure("jax_served_by_shim", served, "calls")
    g.figure("jax_dlsym_hooked", g.shim_stats().get("dlsym_hooked", 0), "lookups")
    g.check(served >= 1, "JAX's pinned_host memory served by the shim")
g.done("jax_check")
