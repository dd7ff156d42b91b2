"""A DataLoader program for the worker batch marker test: 40 items in
batches of 4 through 2 workers, from a map-style or an iterable dataset
(each worker yields its own half, so each loads 5 batches and then finds
its end). Prints the batches the trainer received.

    worker_batches.py map|iterable
"""
import sys

import torch
from torch.utils.data import DataLoader, Dataset, IterableDataset, get_worker_info

N = 40


class Items(Dataset):
    def __len__(self):
        return N

    def __getitem__(self, i):
        return torch.tensor(i)


class Stream(IterableDataset):
    def __iter__(self):
        info = get_worker_info()
        w, n = (info.id, info.num_workers) if info else (0, 1)
        return iter([torch.tensor(i) for i in range(w, N, n)])


def main():
    ds = Items() if sys.argv[1] == "map" else Stream()
    loader = DataLoader(ds, batch_size=4, num_workers=2)
    got = [int(x) for b in loader for x in b]
    print("batches %d items %d" % (len(got) // 4, len(set(got))))


if __name__ == "__main__":
    main()
