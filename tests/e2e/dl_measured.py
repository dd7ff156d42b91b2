"""DataLoader loops with a known answer, for tests/e2e/test_measured_time.py.

usage: dl_measured.py MODE [FILE]
  sleep    2 workers, each sample sleeps 10 ms: the trainer is blocked
  cpu0     no workers, each sample burns 4 ms of the trainer's own CPU
           time: the trainer receives (makes) every batch itself
  memmap   2 workers read rows of a numpy memmap of FILE, dropped from the
           page cache first (posix_fadvise DONTNEED): page-fault I/O
Each step "trains" by sleeping 2 ms. Prints one line: the batches."""
import mmap
import os
import sys
import time

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


def burn_cpu(ms):
    end = time.thread_time_ns() + ms * 1000000
    x = 1
    while time.thread_time_ns() < end:
        for _ in range(200):
            x = (x * 6364136223846793005 + 1) & 0xFFFFFFFFFFFFFFFF
    return x


class Sleepy(Dataset):
    def __len__(self):
        return 160

    def __getitem__(self, i):
        time.sleep(0.010)
        return torch.full((16,), float(i))


class Busy(Dataset):
    def __len__(self):
        return 120

    def __getitem__(self, i):
        burn_cpu(4)
        return torch.full((16,), float(i))


ROW = 16 * 4096  # bytes per sample: 16 pages


class Mapped(Dataset):
    def __init__(self, path):
        self.path = path
        self.n = os.path.getsize(path) // ROW
        self.mm = None

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.mm is None:
            self.mm = np.memmap(self.path, dtype=np.uint8, mode="r")
            # a random-access dataset: no readahead, each page read is a
            # major fault (without it one fault reads megabytes around it)
            self.mm._mmap.madvise(mmap.MADV_RANDOM)
        row = np.array(self.mm[i * ROW:(i + 1) * ROW])
        return torch.from_numpy(row[:64].astype(np.float32))


def main():
    mode = sys.argv[1]
    if mode == "sleep":
        dl = DataLoader(Sleepy(), batch_size=4, num_workers=2)
    elif mode == "cpu0":
        dl = DataLoader(Busy(), batch_size=4, num_workers=0)
    elif mode == "memmap":
        path = sys.argv[2]
        fd = os.open(path, os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)
        dl = DataLoader(Mapped(path), batch_size=4, num_workers=2, shuffle=True,
                        generator=torch.Generator().manual_seed(1))
    else:
        sys.exit("unknown mode " + mode)
    n = 0
    for batch in dl:
        time.sleep(0.002)
        n += 1
    print("batches", n)


if __name__ == "__main__":
    main()
