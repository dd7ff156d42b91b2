"""A training loop whose loader is a thread pool, for
tests/python/test_loops.py: no DataLoader, no markers; each batch's PNG
files are read and decoded by a concurrent.futures.ThreadPoolExecutor
(pool.map), and the training thread waits for them.

usage: loop_threadpool.py DIR --steps N [--batch B] [--threads T] [--sleep-ms S]
  DIR         PNG files (*.png)
  --sleep-ms  each image also waits S ms (a remote store's latency: other
              blocking)

Each work item (one image: read, decode, wait) is a unit of its pool
thread's loading (loop_clock.py `loop-part` lines); `loop` has every step,
its wait being the pool.map of the batch and the stacking of its images.
"""
import argparse
import io
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch
from PIL import Image

from loop_clock import sim_gpu_from_env, Parts, Steps


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--sleep-ms", type=float, default=0)
    a = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    files = sorted(os.path.join(a.dir, f) for f in os.listdir(a.dir) if f.endswith(".png"))
    parts = threading.local()

    def load(path):
        p = getattr(parts, "p", None)
        if p is None:
            p = parts.p = Parts("pool_item")
        p.begin()
        with open(path, "rb") as f:
            raw = p.read(f)
        img = np.asarray(Image.open(io.BytesIO(raw)).convert("RGB"), dtype=np.float32)
        img = img.mean(axis=2)
        if a.sleep_ms:
            time.sleep(a.sleep_ms / 1000.0)
        p.end()
        return img

    side = np.asarray(Image.open(files[0])).shape[0]
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(side * side, 256),
                                torch.nn.ReLU(), torch.nn.Linear(256, 10))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    gpu = sim_gpu_from_env()  # LOOP_SIM_GPU: on the simulated GPU
    steps = Steps()
    k = 0
    with ThreadPoolExecutor(max_workers=a.threads) as pool:
        for _ in range(a.steps):
            steps.start()
            batch = [files[(k + i) % len(files)] for i in range(a.batch)]
            k += a.batch
            steps.wait_begin()
            x = torch.from_numpy(np.stack(list(pool.map(load, batch))))
            steps.wait_end()
            loss = model(x).square().mean()
            if gpu is not None:
                gpu.step(x.numpy())
            loss.backward()
            opt.step()
            opt.zero_grad()
            steps.end()
    steps.emit(style="threadpool")


if __name__ == "__main__":
    main()
