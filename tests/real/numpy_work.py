"""NumPy as a user runs it (issue 12): FFT, linear algebra, save/load of
512 MiB, memmap, a multiprocessing pool. Prints hashes of every result, so a
run under the shim must print what a run without it prints."""
import hashlib
import multiprocessing
import os
import sys
import tempfile

import numpy as np


def h(a):
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()[:24]


def chunk_sum(i):
    r = np.random.default_rng(i)
    a = r.standard_normal(1 << 18)  # 2 MiB per task
    return float(np.sort(a)[::7].sum())


def main():
    rng = np.random.default_rng(0)
    x = rng.standard_normal(1 << 20)
    print("fft", h(np.fft.rfft(x)), h(np.fft.ifft(np.fft.fft(x[: 1 << 16]))))
    m = rng.standard_normal((600, 600))
    b = rng.standard_normal((600, 4))
    print("linalg solve", h(np.linalg.solve(m, b)), "det", repr(np.linalg.det(m[:50, :50])))
    print("linalg svd", h(np.linalg.svd(m[:300, :200], compute_uv=False)), "qr", h(np.linalg.qr(m)[1]))
    print("matmul", h(m @ m), "einsum", h(np.einsum("ij,jk->ik", m[:, :64], m[:64])))

    with tempfile.TemporaryDirectory() as d:
        big = np.arange(1 << 26, dtype=np.float64)  # 512 MiB
        big[::4097] *= -1.5
        path = os.path.join(d, "big.npy")
        np.save(path, big)
        back = np.load(path)
        print("save/load 512 MiB", h(back), bool((back == big).all()))
        del back, big
        mm = np.memmap(os.path.join(d, "mm.dat"), dtype=np.float32, mode="w+", shape=(4096, 1024))
        mm[:] = np.arange(4096 * 1024, dtype=np.float32).reshape(4096, 1024) % 977
        mm.flush()
        del mm
        again = np.memmap(os.path.join(d, "mm.dat"), dtype=np.float32, mode="r", shape=(4096, 1024))
        print("memmap", h(again), repr(float(again.sum(dtype=np.float64))))
        del again

    for method in ("fork", "spawn", "forkserver"):
        with multiprocessing.get_context(method).Pool(2) as pool:
            print("pool", method, repr(sum(pool.map(chunk_sum, range(16)))))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
