"""A Python workload that allocates large buffers (bytearray, bytes, array,
memoryview, growing buffers, threads): its output depends only on the
computation, so it must print the same with and without the shim."""
import array
import hashlib
import json
import threading
import zlib

out = []
h = hashlib.sha256()

# Large buffers of many sizes, written, hashed and dropped.
for i in range(40):
    n = (i * 97 + 13) * 4099
    b = bytearray(n)
    for j in range(0, n, 4093):
        b[j] = (i + j) & 0xFF
    h.update(b)
    out.append(len(b))

# A buffer grown piece by piece (realloc across the threshold).
grow = bytearray()
for i in range(3000):
    grow += bytes([i & 0xFF]) * 997
h.update(grow)

# array and memoryview slices of one big block.
a = array.array("d", (float(i) * 0.5 for i in range(400000)))
view = memoryview(a).cast("B")
h.update(view[1000:900000])
total = sum(a[::1000])

# Compression makes and frees buffers of its own.
blob = bytes(range(256)) * 20000
z = zlib.compress(blob, 6)
assert zlib.decompress(z) == blob
h.update(z)

# Threads allocating and freeing large buffers at once.
results = [None] * 4


def work(k):
    hh = hashlib.md5()
    for r in range(30):
        buf = bytes([(k * 31 + r) & 0xFF]) * (100000 + 5000 * r)
        hh.update(buf)
        del buf
    results[k] = hh.hexdigest()


threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()

print(json.dumps({"sizes": sum(out), "sha256": h.hexdigest(), "total": total,
                  "compressed": len(z), "threads": results}, sort_keys=True))
