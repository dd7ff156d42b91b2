#!/usr/bin/env python3
"""A small but real image-style training loop over files on disk.

Each sample is a file holding a raw 8-bit image (a 12-byte header: height,
width, channels as little-endian uint32, then the pixels). __getitem__ reads
the file, decodes it, augments it (random crop and flip) and normalises it,
as an image pipeline does; the model is a small CNN trained with SGD.

    python3 train.py --data DIR [--make-data N] [--num-workers K]
                     [--pin-memory] [--batch-size B] [--steps S] [--epochs E]
                     [--decode-work W] [--read-delay-ms D] [--device cpu|cuda]
                     [--mp-context fork|spawn|forkserver] [--persistent-workers]
                     [--val-samples V]

It measures its own time blocked in next(loader) and prints, on stderr, one
line `train.py {json}` with the median step time and the share of step time
spent waiting for data, so a profiler's numbers can be checked against it.
Runs on CPU and, unchanged, on a GPU (--device cuda; with --pin-memory the
host-to-device copies are asynchronous from pinned memory). Works with
torch 1.13 and 2.x.
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


def image_paths(root):
    """The image files make_data wrote under root, in name order."""
    return sorted(os.path.join(root, p) for p in os.listdir(root) if p.endswith(".raw"))


class RawImages(Dataset):
    """Image files -> (3x56x56 float tensor, label). Picklable, so spawn and
    forkserver workers can receive it."""

    def __init__(self, paths, decode_work=1, read_delay_ms=0.0, train=True):
        self.paths = list(paths)
        self.decode_work = decode_work
        self.read_delay = read_delay_ms / 1e3
        self.train = train

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        if self.read_delay:  # stand-in for the latency of network storage
            time.sleep(self.read_delay)
        with open(self.paths[i], "rb") as f:
            blob = f.read()
        h, w, c = struct.unpack_from("<III", blob)
        img = np.frombuffer(blob, dtype=np.uint8, offset=12).reshape(h, w, c)
        rng = random.Random(i)
        if self.train:  # random crop; validation takes the centre
            y, x = rng.randrange(h - CROP + 1), rng.randrange(w - CROP + 1)
        else:
            y, x = (h - CROP) // 2, (w - CROP) // 2
        img = img[y:y + CROP, x:x + CROP].astype(np.float32)
        for _ in range(self.decode_work):  # stand-in for JPEG decode cost
            img = np.sqrt(img * img + 1.0)
        if self.train and rng.random() < 0.5:
            img = img[:, ::-1]
        t = torch.from_numpy(np.ascontiguousarray(img)).permute(2, 0, 1)
        t = (t - 128.0) / 64.0
        return t, i % 10


def model():
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
        nn.Flatten(), nn.Linear(32, 10))


def seed_worker(worker_id):
    """worker_init_fn: per-worker numpy/random seeds (a common user hook)."""
    seed = torch.initial_seed() % 2 ** 32
    np.random.seed(seed)
    random.seed(seed)


def make_loader(ds, a, shuffle, batch_size):
    kw = {}
    if a.num_workers > 0:
        if a.mp_context:
            kw["multiprocessing_context"] = a.mp_context
        if a.persistent_workers:
            kw["persistent_workers"] = True
    return DataLoader(ds, batch_size=batch_size, shuffle=shuffle,
                      num_workers=a.num_workers, pin_memory=a.pin_memory,
                      worker_init_fn=seed_worker,
                      generator=torch.Generator().manual_seed(0), **kw)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True, help="dataset directory")
    ap.add_argument("--make-data", type=int, default=0, metavar="N",
                    help="first write N image files into --data")
    ap.add_argument("--num-workers", type=int, default=0)
    ap.add_argument("--pin-memory", action="store_true")
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--steps", type=int, default=0, help="stop after S steps (0: all epochs)")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--decode-work", type=int, default=1,
                    help="extra per-sample CPU work in the loader")
    ap.add_argument("--read-delay-ms", type=float, default=0.0,
                    help="simulated storage latency per file read, in ms")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--mp-context", choices=["fork", "spawn", "forkserver"], default=None,
                    help="multiprocessing start method of the loader workers")
    ap.add_argument("--persistent-workers", action="store_true")
    ap.add_argument("--val-samples", type=int, default=0, metavar="V",
                    help="hold out the last V files; validate on them after each epoch "
                         "with a second DataLoader")
    a = ap.parse_args(argv)

    if a.make_data:
        make_data(a.data, a.make_data)
    torch.manual_seed(0)
    torch.set_num_threads(1)
    dev = torch.device(a.device)
    paths = image_paths(a.data)
    split = len(paths) - a.val_samples if 0 < a.val_samples < len(paths) else len(paths)
    ds = RawImages(paths[:split], a.decode_work, a.read_delay_ms)
    loader = make_loader(ds, a, True, a.batch_size)
    val_loader = None
    if split < len(paths):
        val_loader = make_loader(RawImages(paths[split:], a.decode_work, a.read_delay_ms,
                                           train=False), a, False, a.batch_size)
    net = model().to(dev)
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    lossf = nn.CrossEntropyLoss()

    steps, wait, step_times = 0, 0.0, []
    val_batches, val_correct, val_seen = 0, 0, 0
    t_start = time.perf_counter()
    for _ in range(a.epochs):
        net.train()
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
        del it
        if a.steps and steps >= a.steps:
            break
        if val_loader is not None:
            net.eval()
            with torch.no_grad():
                for x, y in val_loader:
                    x = x.to(dev, non_blocking=a.pin_memory)
                    pred = net(x).argmax(1).cpu()
                    val_correct += int((pred == y).sum())
                    val_seen += len(y)
                    val_batches += 1
    total = time.perf_counter() - t_start
    busy = sum(step_times)
    step_times.sort()
    summary = {
        "steps": steps,
        "median_step_ms": 1e3 * step_times[len(step_times) // 2] if step_times else 0.0,
        # the share of step time spent blocked in next(loader): what a
        # profiler's data-wait share over the same steps should say
        "data_wait_share": wait / busy if busy > 0 else 0.0,
        "data_wait_s": wait,
        "step_s": busy,
        "wall_s": total,
        "num_workers": a.num_workers,
        "pin_memory": a.pin_memory,
        "val_batches": val_batches,
    }
    print("train.py " + json.dumps(summary), file=sys.stderr)
    print("trained %d steps on %d samples" % (steps, len(ds)))
    if val_seen:
        print("validated %d samples" % val_seen)
    return 0


if __name__ == "__main__":
    sys.exit(main())
