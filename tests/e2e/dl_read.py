"""A DataLoader script for the end-to-end tests: reads every file of a
directory through a torch DataLoader and prints what it read (deterministic
output, so traced and untraced runs can be compared byte for byte).

    dl_read.py DIR NUM_WORKERS [CONTEXT]
"""
import hashlib
import os
import sys

import torch
from torch.utils.data import DataLoader, Dataset


class Files(Dataset):
    def __init__(self, root):
        self.paths = sorted(os.path.join(root, p) for p in os.listdir(root))

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        with open(self.paths[i], "rb") as f:
            data = f.read()
        digest = hashlib.sha1(data).digest()
        return torch.tensor(len(data)), torch.tensor(list(digest[:8]), dtype=torch.uint8)


def main():
    root, workers = sys.argv[1], int(sys.argv[2])
    ctx = sys.argv[3] if len(sys.argv) > 3 else None
    loader = DataLoader(Files(root), batch_size=8, num_workers=workers,
                        multiprocessing_context=ctx if workers else None)
    total, h = 0, hashlib.sha1()
    for n, d in loader:
        total += int(n.sum())
        h.update(d.numpy().tobytes())
    print("files %d bytes %d digest %s" % (len(loader.dataset), total, h.hexdigest()))


if __name__ == "__main__":
    main()
