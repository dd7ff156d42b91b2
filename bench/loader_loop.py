#!/usr/bin/env python3
"""The DataLoader workload of bench_collector.py (examples/pytorch/train.py's
dataset and loader: 2 workers, 2 epochs) with a model of 4 inputs in place of
train.py's convolutions, so that it runs under valgrind in minutes: the
training loop's every step (zero_grad, backward, step) and every batch, little
else. For instruction counts of the traced program, free of the machine's load
(docs/performance.md, "Traced by `gpustarve run`"):

    GPUSTARVE_PYTHON={0,1} gpustarve run -q -o R -- valgrind --tool=callgrind \\
        --callgrind-out-file=OUT/cg.%p /usr/bin/python3 bench/loader_loop.py DATA

against `LD_PRELOAD=build/libgpustarve.so GPUSTARVE_DIR=R valgrind ...`: each
process's file's `summary:` line (a forked worker's includes its parent's
instructions before the fork). DATA: a folder of train.py's images
(`train.py --data DATA --make-data 600 --steps 1` writes it). Prints the steps
made; asserts nothing."""
import argparse
import os
import sys

import torch
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples",
                                "pytorch"))
import train  # noqa: E402  (examples/pytorch/train.py: its dataset and loader)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("data", help="a folder of train.py's images")
    ap.add_argument("--num-workers", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=2)
    a = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    paths = train.image_paths(a.data)
    opts = argparse.Namespace(num_workers=a.num_workers, mp_context=None,
                              persistent_workers=False, pin_memory=False)
    loader = train.make_loader(train.RawImages(paths), opts, True, 16)
    net = nn.Linear(4, 2)
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    x0 = torch.ones(1, 4)
    steps = 0
    for _ in range(a.epochs):
        for _x, _y in loader:
            opt.zero_grad()
            net(x0).sum().backward()
            opt.step()
            steps += 1
    print("loader_loop: %d steps" % steps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
