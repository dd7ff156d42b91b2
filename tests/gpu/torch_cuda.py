#!/usr/bin/env python3
"""A small PyTorch CUDA training loop for tests/gpu/validate.sh.

torch_cuda.py --pin-memory 0|1 [--steps N] [--workers N]

A DataLoader (workers, pin_memory as given) over random tensors feeds a
small MLP on the GPU; batches go to the device with non_blocking=True (a
pinned batch copies asynchronously, a pageable one is staged); each step is
an NVTX range "train_step". Prints one JSON line on stderr. Exit 3 when
torch with CUDA is not available (the caller reports SKIP)."""
import argparse
import json
import sys

from gpu_torch import torch_with_cuda
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pin-memory", type=int, default=1)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args()
    torch = torch_with_cuda("torch_cuda")
    if torch is None:
        return 3
    from torch.utils.data import DataLoader, TensorDataset
    torch.manual_seed(0)
    n = a.steps * 64
    ds = TensorDataset(torch.randn(n, 1024), torch.randint(0, 10, (n,)))
    dl = DataLoader(ds, batch_size=64, num_workers=a.workers, pin_memory=bool(a.pin_memory))
    dev = torch.device("cuda")
    model = torch.nn.Sequential(torch.nn.Linear(1024, 2048), torch.nn.ReLU(),
                                torch.nn.Linear(2048, 10)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    t0 = time.time()
    steps = 0
    for x, y in dl:
        torch.cuda.nvtx.range_push("train_step")
        x = x.to(dev, non_blocking=True)
        y = y.to(dev, non_blocking=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()
        steps += 1
    print(json.dumps({"example": "torch_cuda", "torch": torch.__version__,
                      "cuda": torch.version.cuda, "device": torch.cuda.get_device_name(0),
                      "steps": steps, "pin_memory": a.pin_memory,
                      "loss": float(loss), "wall_s": round(time.time() - t0, 3)}),
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
