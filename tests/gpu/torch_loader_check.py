"""GPU check, a PyTorch DataLoader with pin_memory=True and 4 forked workers
(run.sh: without the shim, then with it): every batch is pinned by the
loader's pin thread (torch's cudaHostAlloc, served by the shim), copied to the
device without blocking and summed there; the sums are checked against what
the dataset made. Figures: batches per second over the timed batches, the
data check, and the pinned MiB (torch's host allocator statistics without
the shim, the shim's own with it)."""
import time

import gpucheck as g

torch = g.need_torch_cuda()
from torch.utils.data import DataLoader, Dataset  # noqa: E402

ELEMS = 1 << 20  # 4 MiB of float32 per sample
BATCH, BATCHES, WARM = 8, 96, 8


class Samples(Dataset):
    def __len__(self):
        return BATCH * BATCHES

    def __getitem__(self, i):
        return torch.full((ELEMS,), float(i % 251), dtype=torch.float32)


loader = DataLoader(Samples(), batch_size=BATCH, num_workers=4, pin_memory=True,
                    multiprocessing_context="fork")
intact, pinned_all = True, True
sums = []
start = None
for k, batch in enumerate(loader):
    if k == WARM:
        torch.cuda.synchronize()
        start = time.perf_counter()
    pinned_all &= batch.is_pinned()
    sums.append(batch.to("cuda", non_blocking=True).sum(dim=1))
torch.cuda.synchronize()
elapsed = time.perf_counter() - start
for k, s in enumerate(sums):
    want = torch.tensor([float((k * BATCH + j) % 251) * ELEMS for j in range(BATCH)])
    intact &= torch.equal(s.cpu(), want)
g.figure("loader_batches_per_s", (BATCHES - WARM) / elapsed, "batch/s")
g.figure("loader_data_intact", int(intact), "flag")
g.check(intact, "every batch arrived on the device intact")
g.check(pinned_all, "every batch the loader handed out is pinned")
if g.SHIM:
    g.figure("loader_pinned_MiB", g.shim_stats().get("pinned_bytes", 0) / g.MiB, "MiB")
else:
    # torch's host allocator: bytes it holds from cudaHostAlloc, cached included
    stats = getattr(torch.cuda, "host_memory_stats", lambda: {})()
    if "allocated_bytes.current" in stats:
        g.figure("loader_pinned_MiB", stats["allocated_bytes.current"] / g.MiB, "MiB")
g.done("torch_loader_check")
