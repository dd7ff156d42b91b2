#!/usr/bin/env python3
"""torch.profiler inside a traced run, for tests/gpu/validate.sh.

torch_profiler.py [--steps N] [--profile-from N]

A small CUDA training loop (NVTX "train_step" per step) that starts
torch.profiler (CPU and CUDA activities) at step --profile-from, as users do
to look at a few steps of a long run. Under gpustarve, gpustarve hands CUPTI
over when Kineto starts (one warning); the profiler must still see the CUDA
kernels of the steps it covers. Prints one JSON line on stdout: the number
of CUDA kernel events torch.profiler recorded. Exit 3 when torch with CUDA
is not available."""
import argparse
import json
import sys

from gpu_torch import torch_with_cuda


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--profile-from", type=int, default=4)
    a = ap.parse_args()
    torch = torch_with_cuda("torch_profiler")
    if torch is None:
        return 3
    from torch.profiler import ProfilerActivity, profile
    dev = torch.device("cuda")
    model = torch.nn.Linear(2048, 2048).to(dev)
    x = torch.randn(512, 2048, device=dev)
    prof = None
    for step in range(a.steps):
        if step == a.profile_from:
            prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
            prof.__enter__()
        torch.cuda.nvtx.range_push("train_step")
        model(x).sum().backward()
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()
    kernels = 0
    if prof is not None:
        prof.__exit__(None, None, None)
        kernels = sum(1 for e in prof.events()
                      if str(getattr(e, "device_type", "")).endswith("CUDA"))
    print(json.dumps({"example": "torch_profiler", "profiled_steps": a.steps - a.profile_from,
                      "cuda_kernel_events": kernels}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
