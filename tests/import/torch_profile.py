"""Write a PyTorch profiler trace with the torch this interpreter has (CPU):
a DataLoader whose __getitem__ sleeps, a small model, torch.profiler with a
wait/warmup/active schedule and prof.step() per batch.

Usage: python torch_profile.py OUT.json [NUM_WORKERS]
"""
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset


class Slow(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        time.sleep(0.004)  # 4 ms per sample, 8 per batch: ~32 ms of loading inline
        return torch.randn(64), i % 2


def main():
    out = sys.argv[1]
    workers = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(Slow(), batch_size=8, num_workers=workers)
    sched = torch.profiler.schedule(wait=1, warmup=1, active=4, repeat=1)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                schedule=sched,
                                on_trace_ready=lambda p: p.export_chrome_trace(out)) as prof:
        for x, y in loader:
            loss = torch.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            prof.step()


if __name__ == "__main__":
    main()
