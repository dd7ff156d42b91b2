#!/usr/bin/env python3
"""A single-GPU DistributedDataParallel training loop on the NCCL backend,
for tests/gpu/validate.sh.

torch_ddp.py [--steps N]

One process, world size 1, NCCL. RATIONALE: with one rank NCCL skips an
in-place SUM all-reduce entirely (nothing to exchange), which is what DDP's
default hook issues; the comm hook here averages (ncclAvg), which NCCL runs
as its one-rank reduction kernel, so the step has real NCCL work for the
report's communication share. Each step is an NVTX range "train_step".
Prints one JSON line on stderr. Exit 3 when torch with CUDA and NCCL is not
available (the caller reports SKIP)."""
import argparse
import json
import os
import socket
import sys

from gpu_torch import torch_with_cuda


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20)
    a = ap.parse_args()
    torch = torch_with_cuda("torch_ddp")
    if torch is None:
        return 3
    import torch.distributed as dist
    if not dist.is_nccl_available():
        print("torch_ddp: torch %s has no NCCL" % torch.__version__, file=sys.stderr)
        return 3
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(free_port()))
    dev = torch.device("cuda", 0)
    torch.cuda.set_device(dev)
    dist.init_process_group("nccl", rank=0, world_size=1)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.ReLU(),
                                torch.nn.Linear(4096, 10)).to(dev)
    ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[0])

    def average(state, bucket):
        fut = dist.all_reduce(bucket.buffer(), op=dist.ReduceOp.AVG, async_op=True).get_future()
        return fut.then(lambda f: f.value()[0])

    ddp.register_comm_hook(None, average)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    x = torch.randn(256, 1024, device=dev)
    y = torch.randint(0, 10, (256,), device=dev)
    for _ in range(a.steps):
        torch.cuda.nvtx.range_push("train_step")
        loss = torch.nn.functional.cross_entropy(ddp(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()
    print(json.dumps({"example": "torch_ddp", "torch": torch.__version__,
                      "nccl": ".".join(map(str, torch.cuda.nccl.version())),
                      "steps": a.steps, "loss": float(loss)}), file=sys.stderr)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
