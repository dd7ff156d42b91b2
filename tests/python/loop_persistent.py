"""A DataLoader loop with persistent workers, a deep prefetch and a costly
collate function, for tests/python/test_loops.py (and, with --workers 0
and the defaults, the plain DataLoader loop).

usage: loop_persistent.py DIR --workers W [--epochs E] [--batch B]
                          [--prefetch P] [--persistent] [--item-ms C]
                          [--collate-ms K] [--sleep-ms S] [--step-ms T]
  DIR           sample files (*.bin, raw float32)
  --item-ms     CPU time each sample costs in __getitem__
  --collate-ms  CPU time the collate function costs per batch
  --sleep-ms    each sample also waits S ms (other blocking)
  --step-ms     CPU time of a step's compute besides the model

Each __getitem__ is a unit of its loading thread, and so is each collate
call (loop_clock.py `loop-part`, what = item / collate); with a collate
function, so is each whole batch, from its first __getitem__ to the
collate's end (what = batch: the gaps between the units too, where
preemptions land at the return of a system call: the units' own clock
reads and writes and the markers'); `loop` has every step, its wait being
next().
"""
import argparse
import os
import time

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.dataloader import default_collate

from loop_clock import Parts, Steps, burn
from loop_train import Trainer

# a worker's first batches (prefetched before the report's measured steps
# begin) are left out of its `skipped` totals (loop_clock.Parts): 2, or the
# prefetch_factor when deeper (each worker makes that many before the
# trainer's first step ends)
SKIP_BATCHES = 2

# the batch a worker is making (its first __getitem__ to its collate's end),
# when the collate function marks where a batch ends
BATCH = {"part": None}


class Files(Dataset):
    def __init__(self, files, item_ms, sleep_ms, skip):
        self.files, self.item_ms, self.sleep_ms, self.skip = files, item_ms, sleep_ms, skip
        self.part = None

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        if self.part is None:
            self.part = Parts("item", skip=self.skip)
        p, whole = self.part, BATCH["part"]
        if whole is not None and not whole.open:
            whole.begin()
        p.begin()
        with open(self.files[i], "rb") as f:
            raw = p.read(f, also=whole)
        x = np.frombuffer(raw, dtype=np.float32).copy()
        burn(self.item_ms)
        if self.sleep_ms:
            time.sleep(self.sleep_ms / 1000.0)
        p.end()
        return torch.from_numpy(x)


class Collate(object):
    def __init__(self, ms, skip):
        self.ms, self.skip = ms, skip
        self.part = None

    def __call__(self, samples):
        if self.part is None:
            self.part = Parts("collate", skip=self.skip)
        self.part.begin()
        burn(self.ms)
        out = default_collate(samples)
        self.part.end()
        whole = BATCH["part"]
        if whole is not None and whole.open:
            whole.end()
        return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--prefetch", type=int, default=0)
    ap.add_argument("--persistent", action="store_true")
    ap.add_argument("--item-ms", type=float, default=2)
    ap.add_argument("--collate-ms", type=float, default=0)
    ap.add_argument("--sleep-ms", type=float, default=0)
    ap.add_argument("--step-ms", type=float, default=4)
    a = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    files = sorted(os.path.join(a.dir, f) for f in os.listdir(a.dir) if f.endswith(".bin"))
    kw = {}
    if a.workers:
        kw["persistent_workers"] = a.persistent
        if a.prefetch:
            kw["prefetch_factor"] = a.prefetch
    skip = max(SKIP_BATCHES, a.prefetch if a.workers else 0)
    if a.collate_ms:
        kw["collate_fn"] = Collate(a.collate_ms, skip)
        BATCH["part"] = Parts("batch", skip=skip)
    dl = DataLoader(Files(files, a.item_ms, a.sleep_ms, skip * a.batch),
                    batch_size=a.batch, shuffle=True,
                    num_workers=a.workers, **kw)
    trainer, steps = Trainer(a.step_ms), Steps()
    for _ in range(a.epochs):
        it = iter(dl)
        trainer.epoch(it, steps)
        del it
    steps.emit(style="dataloader", workers=a.workers)


if __name__ == "__main__":
    main()
