"""DataLoader workers under one multiprocessing start method (fork, spawn or
forkserver; issue 12): workers build batches of large tensors, the parent
sums them, also with pin_memory=True (a CPU-only torch pins nothing, but
takes the same path). Prints the sums in full precision."""
import sys

import torch
import torch.multiprocessing as mp
from torch.utils.data import DataLoader, Dataset


class Blocks(Dataset):
    """Item i: a 128 x 1024 float tensor (512 KiB) filled from seed i."""

    def __len__(self):
        return 48

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        return torch.randn(128, 1024, generator=g), i


def main(method):
    torch.set_num_threads(1)
    ctx = mp.get_context(method)
    for pin in (False, True):
        loader = DataLoader(Blocks(), batch_size=4, num_workers=2, multiprocessing_context=ctx,
                            pin_memory=pin and torch.cuda.is_available())
        total, order = 0.0, []
        for x, idx in loader:
            total += x.double().sum().item()
            order += idx.tolist()
        print(method, "pin" if pin else "plain", repr(total), order == list(range(48)))


if __name__ == "__main__":
    main(sys.argv[1])
