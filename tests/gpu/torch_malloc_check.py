"""GPU check of malloc hints, PyTorch side (tests/gpu/run.sh runs it without
the shim, then with it and DSP_MALLOC_MIN=1M).

torch.empty(n) on the CPU comes from posix_memalign; with hints on it is born
pinned, so tensor.pin_memory() finds it pinned (is_pinned() asks
cudaPointerGetAttributes, which registers the block with the driver on that
first question) and returns the same storage: no copy, and no power-of-two
rounding (torch alone pins 32 GiB for a 20.4 GiB tensor).

Prints `name value unit` lines and PASS, or FAIL lines and exits 1.
"""
import ctypes
import os
import sys

import torch

shim = "libdspreload" in os.environ.get("LD_PRELOAD", "") and os.environ.get("DSP_MALLOC_MIN")
fail = []


def check(cond, what):
    if not cond:
        fail.append(what)
        print("FAIL", what, flush=True)


def status_kib(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def shim_stat(key):
    lib = ctypes.CDLL(None)
    buf = ctypes.create_string_buffer(8192)
    lib.dsp_stats_json(buf, ctypes.c_size_t(8192))
    import json
    return json.loads(buf.value.decode()).get(key, 0)


GiB = 1 << 30
size = int(20.4 * GiB)
torch.cuda.init()
rss0 = status_kib("VmRSS")
t = torch.empty(size // 4, dtype=torch.float32)
t[:: 1 << 20].fill_(1.0)  # touch a little, as a loader would
p = t.pin_memory()
torch.cuda.synchronize()
rss1 = status_kib("VmRSS")
same = p.data_ptr() == t.data_ptr()
print("same_storage", int(same), "bool")
print("is_pinned", int(p.is_pinned()), "bool")
grew = (rss1 - rss0) / (1 << 20)
print("resident_growth_GiB", round(grew, 2), "GiB")
if shim:
    pinned = shim_stat("pinned_bytes") / GiB
    print("shim_pinned_GiB", round(pinned, 2), "GiB")
    print("VmLck_GiB", round(status_kib("VmLck") / (1 << 20), 2), "GiB")
    check(same, "pin_memory() returns the same storage")
    check(p.is_pinned(), "the hinted tensor is pinned")
    check(pinned < 21, "physical memory pinned for 20.4 GiB stays under 21 GiB")
    check(grew < 21, "resident memory for 20.4 GiB stays under 21 GiB")
    check(shim_stat("malloc_hinted") >= 1, "torch.empty was hinted")
else:
    check(p.is_pinned() and not same, "torch alone: pin_memory() copies into pinned memory")
    # torch's caching host allocator rounds 20.4 GiB up to 32 GiB.
    print("torch_pins_about_GiB", round(grew, 2), "GiB")
del p, t
print("PASS" if not fail else "FAIL %d checks" % len(fail))
sys.exit(1 if fail else 0)
