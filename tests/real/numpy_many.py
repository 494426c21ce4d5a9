"""70,000 live NumPy arrays of 100 KiB (issue 12): under the shim at
DSP_MALLOC_MIN=64K each was a pinned block with a memory map of its own, and
vm.max_map_count (65,530) ran out: malloc, threads and imports failed from
then on, for good. Now the maps stay near their count without the shim, and
the process keeps working with every array alive and after they are freed.
Prints the same with and without the shim; exits 1 with the reason if not."""
import sys
import threading

import numpy as np


def maps():
    with open("/proc/self/maps") as f:
        return sum(1 for _ in f)


def works():
    big = np.ones(64 << 17)  # 64 MiB
    t = threading.Thread(target=lambda: None)
    t.start()
    t.join()
    import decimal  # noqa: F401  (an import that opens and maps a module)
    return float(big.sum()) == 64 << 17


start = maps()
arrays = []
for i in range(70000):
    a = np.empty(12800)  # 100 KiB
    a[0], a[-1] = i, -i
    arrays.append(a)
peak = maps()
ok = works()
total = sum(float(a[0] - a[-1]) for a in arrays)
del arrays
after = maps()
ok = ok and works()
print("arrays", 70000, "checksum", repr(total), "works", ok)
if peak - start > 500:
    print(f"FAIL: {peak - start} memory maps for 70,000 live arrays (from {start})")
    sys.exit(1)
if after - start > 100:
    print(f"FAIL: {after - start} memory maps left after the arrays were freed")
    sys.exit(1)
sys.exit(0 if ok else 1)
