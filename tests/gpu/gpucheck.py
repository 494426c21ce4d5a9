"""What every Python part of the GPU check shares (tests/gpu/run.sh runs each
without the shim and with it). The contract with run.sh: a figure is one line
`NAME VALUE UNIT`, a failed check one line `FAIL what`, exit 1 when any check
failed, exit 77 (NOT RUN) when what the part needs is not on this machine."""
import ctypes
import json
import os
import sys

SHIM = "libdspreload" in os.environ.get("LD_PRELOAD", "")
HINTS = SHIM and bool(os.environ.get("DSP_MALLOC_MIN"))
GiB = 1 << 30
MiB = 1 << 20
_failed = []


def not_run(why):
    print("NOT RUN:", why, flush=True)
    sys.exit(77)


def need_torch_cuda():
    try:
        import torch
    except ImportError as e:
        not_run("no torch (%s)" % e)
    if not torch.cuda.is_available():
        not_run("torch %s has no usable CUDA device" % torch.__version__)
    torch.zeros(1, device="cuda")  # the context up front: part of no figure
    torch.cuda.synchronize()
    return torch


def figure(name, value, unit):
    print(name, value if isinstance(value, int) else "%.6g" % float(value), unit, flush=True)


def check(cond, what):
    if not cond:
        _failed.append(what)
        print("FAIL", what, flush=True)
    return cond


def shim_stats():
    """The shim's statistics (dsp_stats_json), or {} without the shim."""
    if not SHIM:
        return {}
    lib = ctypes.CDLL(None)
    buf = ctypes.create_string_buffer(65536)
    n = lib.dsp_stats_json(buf, ctypes.c_size_t(len(buf)))
    return json.loads(buf.value.decode()) if n > 0 else {}


def mem_available():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 0


def done(name):
    print("PASS " + name if not _failed else "FAIL %d checks in %s" % (len(_failed), name), flush=True)
    sys.exit(1 if _failed else 0)
