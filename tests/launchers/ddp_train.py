"""Two-rank CPU DDP training (gloo) for tests/launchers/torchrun.sh.

Prints one "loss" line per rank and step, which must not change under the shim,
and one "pid" line per rank so that the test can tell the ranks' stats files
from the agent's. With NODE_QUERY set (the dspreload command), rank 0 prints
the live node ledger while both ranks hold what they pinned: between two
barriers, so that rank 1 is still alive and has not freed its pool.
"""
import os
import subprocess
import sys

import torch
import torch.distributed as dist
import torch.nn as nn

rank = int(os.environ["RANK"])
world = int(os.environ["WORLD_SIZE"])
torch.manual_seed(0)
torch.use_deterministic_algorithms(True)
torch.set_num_threads(1)
dist.init_process_group("gloo")

# 1024x1024 float32 weights are 4 MiB each: the parameters, their gradients,
# DDP's buckets and the optimizer state are all allocations DSP_MALLOC_MIN=1M pins.
model = nn.Sequential(nn.Linear(512, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                      nn.Linear(1024, 10))
ddp = nn.parallel.DistributedDataParallel(model)
opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
gen = torch.Generator().manual_seed(1000 + rank)
for step in range(6):
    x = torch.randn(512, 512, generator=gen)  # 1 MiB: pinned too
    y = torch.randint(0, 10, (512,), generator=gen)
    opt.zero_grad()
    loss = nn.functional.cross_entropy(ddp(x), y)
    loss.backward()
    opt.step()
    print(f"loss rank {rank} step {step} {loss.item()!r}", flush=True)

# Every rank's parameters are the same after the all-reduces: their sum, in full.
total = sum(p.double().sum().item() for p in model.parameters())
print(f"params rank {rank} {total!r}", flush=True)
print(f"pid rank {rank} {os.getpid()}", flush=True)

dist.barrier()  # both ranks have pinned and are alive
query = os.environ.get("NODE_QUERY")
if rank == 0 and query:
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    table = subprocess.run([query, "stats", "--node", "--key", os.environ["DSP_NODE_KEY"]],
                           env=env, capture_output=True, text=True, check=True).stdout
    sys.stdout.write("".join("node " + line + "\n" for line in table.splitlines()))
    sys.stdout.flush()
dist.barrier()  # rank 1 lives until rank 0 has looked
dist.destroy_process_group()
