"""dspreload: pinned host memory for the programs you run, as a Python package.

The package holds libdspreload.so, the dspreload launcher and its demo
workload. Preload the library with

    LD_PRELOAD=$(python -m dspreload --lib) python train.py

or run a command under it with ``python -m dspreload [options] -- cmd ...``
(the same options and exit status as the dspreload command).
"""

import ctypes
import json
import os

from ._version import __version__

__all__ = ['__version__', 'library_path', 'launcher_path', 'stats']

_HERE = os.path.dirname(os.path.abspath(__file__))


def library_path():
    """The bundled libdspreload.so, for LD_PRELOAD."""
    return os.path.join(_HERE, 'libdspreload.so')


def launcher_path():
    """The bundled dspreload command (it finds the library beside itself)."""
    return os.path.join(_HERE, 'dspreload')


def stats():
    """This process's statistics as a dict when the shim is loaded in it
    (LD_PRELOAD), None otherwise.

    The symbol is looked up in the global namespace only: loading the library
    here would start a second, unpreloaded manager instead of asking the one
    that serves this process.
    """
    try:
        stats_json = ctypes.CDLL(None).dsp_stats_json
    except AttributeError:
        return None
    stats_json.argtypes = (ctypes.c_char_p, ctypes.c_size_t)
    stats_json.restype = ctypes.c_int
    cap = 16384
    while True:
        buf = ctypes.create_string_buffer(cap)
        need = stats_json(buf, cap)
        if need < cap:  # snprintf-style: the whole object and its NUL fit
            return json.loads(buf.value.decode())
        cap = need + 1
