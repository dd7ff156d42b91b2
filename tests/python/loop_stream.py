"""A streaming loop over tar shards, for tests/python/test_loops.py: an
IterableDataset reads the members of its shards in turn (split across
DataLoader workers by worker id, as webdataset does) and decodes each.

usage: loop_stream.py DIR --workers W [--batch B] [--decode-ms C] [--sleep-ms S]
  DIR          tar shards (*.tar) of raw float32 samples
  --decode-ms  CPU time each sample costs to decode
  --sleep-ms   each sample also waits S ms (other blocking)

The loop runs over the whole stream once. Each sample is a unit of the
loading thread (the worker's, or the training thread's with 0 workers:
loop_clock.py `loop-part`); `loop` has every step, its wait being next().
"""
import argparse
import os
import tarfile
import time

import numpy as np
import torch
from torch.utils.data import DataLoader, IterableDataset, get_worker_info

from loop_clock import Parts, Steps, burn
from loop_train import Trainer


class Shards(IterableDataset):
    def __init__(self, shards, decode_ms, sleep_ms, skip):
        self.shards, self.decode_ms, self.sleep_ms, self.skip = shards, decode_ms, sleep_ms, skip

    def __iter__(self):
        info = get_worker_info()
        mine = self.shards[info.id::info.num_workers] if info else self.shards
        part = Parts("stream_sample", skip=self.skip)
        for shard in mine:
            with tarfile.open(shard) as tf:
                while True:
                    part.begin()
                    m = tf.next()
                    if m is None:
                        part.end(emit=False)
                        break
                    raw = part.read(tf.extractfile(m))
                    x = np.frombuffer(raw, dtype=np.float32).copy()
                    burn(self.decode_ms)
                    if self.sleep_ms:
                        time.sleep(self.sleep_ms / 1000.0)
                    part.end()
                    yield torch.from_numpy(x)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--workers", type=int, default=0)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--decode-ms", type=float, default=3)
    ap.add_argument("--sleep-ms", type=float, default=0)
    a = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    shards = sorted(os.path.join(a.dir, f) for f in os.listdir(a.dir) if f.endswith(".tar"))
    # a loader's first 2 batches (before the measured steps) left out of
    # its `skipped` totals (loop_clock.Parts)
    ds = Shards(shards, a.decode_ms, a.sleep_ms, 2 * a.batch)
    dl = DataLoader(ds, batch_size=a.batch, num_workers=a.workers)
    steps = Steps()
    Trainer(4).epoch(iter(dl), steps)
    steps.emit(style="stream", workers=a.workers)


if __name__ == "__main__":
    main()
