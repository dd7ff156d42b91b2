#!/usr/bin/env python3
"""A small but real image-style training loop over files on disk.

Each sample is a file holding a raw 8-bit image (a 12-byte header: height,
width, channels as little-endian uint32, then the pixels). __getitem__ reads
the file, decodes it, augments it (random crop and flip) and normalises it,
as an image pipeline does; the model is a small CNN trained with SGD.

    python3 train.py --data DIR [--make-data N] [--num-workers K]
                     [--pin-memory] [--steps S] [--device cpu|cuda]

It measures its own time blocked in next(loader) and prints, on stderr,
the median step time and the share of time spent waiting for data, so a
profiler's numbers can be checked against it. Runs on CPU and, unchanged,
on a GPU.
"""
import argparse
import json
import os
import random
import struct
import sys
import time

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

CROP = 56


def make_data(root, n, seed=1234):
    """Writes n image files of seeded random sizes (64..96 px a side)."""
    os.makedirs(root, exist_ok=True)
    rng = np.random.default_rng(seed)
    for i in range(n):
        h, w = (int(x) for x in rng.integers(64, 97, size=2))
        pixels = rng.integers(0, 256, size=(h, w, 3), dtype=np.uint8)
        with open(os.path.join(root, "img%06d.raw" % i), "wb") as f:
            f.write(struct.pack("<III", h, w, 3))
            f.write(pixels.tobytes())


class RawImages(Dataset):
    def __init__(self, root, decode_work=1):
        self.paths = sorted(os.path.join(root, p) for p in os.listdir(root)
                            if p.endswith(".raw"))
        self.decode_work = decode_work

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        with open(self.paths[i], "rb") as f:
            blob = f.read()
        h, w, c = struct.unpack_from("<III", blob)
        img = np.frombuffer(blob, dtype=np.uint8, offset=12).reshape(h, w, c)
        rng = random.Random(i)
        y, x = rng.randrange(h - CROP + 1), rng.randrange(w - CROP + 1)
        img = img[y:y + CROP, x:x + CROP].astype(np.float32)
        for _ in range(self.decode_work):  # stand-in for JPEG decode cost
            img = np.sqrt(img * img + 1.0)
        if rng.random() < 0.5:
            img = img[:, ::-1]
        t = torch.from_numpy(np.ascontiguousarray(img)).permute(2, 0, 1)
        t = (t - 128.0) / 64.0
        return t, i % 10


def model():
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
        nn.Flatten(), nn.Linear(32, 10))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True, help="dataset directory")
    ap.add_argument("--make-data", type=int, default=0, metavar="N",
                    help="first write N image files into --data")
    ap.add_argument("--num-workers", type=int, default=0)
    ap.add_argument("--pin-memory", action="store_true")
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--steps", type=int, default=0, help="stop after S steps (0: one epoch)")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--decode-work", type=int, default=1,
                    help="extra per-sample CPU work in the loader")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    a = ap.parse_args(argv)

    if a.make_data:
        make_data(a.data, a.make_data)
    torch.manual_seed(0)
    torch.set_num_threads(1)
    dev = torch.device(a.device)
    ds = RawImages(a.data, a.decode_work)
    loader = DataLoader(ds, batch_size=a.batch_size, shuffle=True,
                        num_workers=a.num_workers, pin_memory=a.pin_memory,
                        generator=torch.Generator().manual_seed(0))
    net = model().to(dev)
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    lossf = nn.CrossEntropyLoss()

    steps, wait, step_times = 0, 0.0, []
    t_start = time.perf_counter()
    for _ in range(a.epochs):
        it = iter(loader)
        while True:
            t0 = time.perf_counter()
            try:
                x, y = next(it)
            except StopIteration:
                break
            t1 = time.perf_counter()
            x = x.to(dev, non_blocking=a.pin_memory)
            y = y.to(dev, non_blocking=a.pin_memory)
            opt.zero_grad()
            loss = lossf(net(x), y)
            loss.backward()
            opt.step()
            if dev.type == "cuda":
                torch.cuda.synchronize()
            t2 = time.perf_counter()
            wait += t1 - t0
            step_times.append(t2 - t0)
            steps += 1
            if a.steps and steps >= a.steps:
                break
        if a.steps and steps >= a.steps:
            break
    total = time.perf_counter() - t_start
    step_times.sort()
    summary = {
        "steps": steps,
        "median_step_ms": 1e3 * step_times[len(step_times) // 2] if step_times else 0.0,
        "data_wait_share": wait / total if total > 0 else 0.0,
        "wall_s": total,
        "num_workers": a.num_workers,
        "pin_memory": a.pin_memory,
    }
    print("train.py " + json.dumps(summary), file=sys.stderr)
    print("trained %d steps on %d samples" % (steps, len(ds)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
