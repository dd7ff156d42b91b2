"""A distributed data-parallel training loop on the CPU (gloo) for the rank
truth tests (tests/e2e/test_ranks.py), started by torchrun.

Usage: torchrun --nproc_per_node=N ddp_ranks.py OUTDIR STEPS STARVED SLEEP_MS
       python ddp_ranks.py --spawn N PORT OUTDIR STEPS STARVED SLEEP_MS

The second form starts the N ranks itself with torch.multiprocessing.spawn,
as PyTorch's DDP tutorial does: the rank reaches init_process_group as an
argument, never through RANK in the environment.

Every rank trains a small model with DistributedDataParallel; the ranks
listed in STARVED (comma-separated, may be empty) load with one DataLoader
worker whose dataset sleeps SLEEP_MS per sample, the others with two workers
and no sleep. A starved rank's worker starts a batch only once the trainer
has asked for it (a semaphore the trainer releases before each fetch), so it
cannot load ahead: however slow a loaded machine makes the training step,
the trainer waits at least a batch's sleep for every batch (a worker that
loaded ahead during long steps made a starved rank wait 3% in one CI run). Each rank times its own steps as gpustarve's Python side cuts
them (a step runs from the start of one batch fetch to the start of the
next; the last ends when the iterator is dropped) and writes OUTDIR/rank<R>.json:
its rank, num_workers, and per step the wait for the batch and the step's
length, in seconds.
"""
import json
import os
import sys
import time

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset


BATCH = 4


class Samples(Dataset):
    def __init__(self, sleep_s):
        self.sleep_s = sleep_s
        if sleep_s:
            self.asked = torch.multiprocessing.Semaphore(0)  # one per batch asked for
            self.done = torch.multiprocessing.Value("b", 0)  # the loop has ended

    def __len__(self):
        return 100000

    def __getitem__(self, i):
        if self.sleep_s:
            if i % BATCH == 0:
                self.asked.acquire()
            if not self.done.value:
                time.sleep(self.sleep_s)
        g = torch.Generator().manual_seed(i)
        return torch.rand(32, generator=g), torch.rand(1, generator=g)


def train(args, rank=None, world=None):
    outdir, steps, starved, sleep_ms = args[0], int(args[1]), args[2], int(args[3])
    starved = {int(x) for x in starved.split(",") if x}
    if rank is None:
        dist.init_process_group("gloo")
    else:
        dist.init_process_group("gloo", rank=rank, world_size=world)
    rank = dist.get_rank()
    slow = rank in starved
    workers = 1 if slow else 2
    torch.manual_seed(0)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(32, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    data = Samples(sleep_ms / 1000.0 if slow else 0)
    loader = DataLoader(data, batch_size=BATCH, num_workers=workers)
    it = iter(loader)
    starts, waits = [], []
    for _ in range(steps):
        t0 = time.monotonic()
        if slow:
            data.asked.release()
        x, y = next(it)
        waits.append(time.monotonic() - t0)
        starts.append(t0)
        loss = ((model(x) - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    end = time.monotonic()
    if slow:  # the batches fetched ahead come at once, so dropping the iterator does not wait
        data.done.value = 1
        for _ in range(4):
            data.asked.release()
    del it  # the last step ends here, as gpustarve's Python side ends it
    bounds = starts + [end]
    lengths = [bounds[i + 1] - bounds[i] for i in range(steps)]
    with open(os.path.join(outdir, "rank%d.json" % rank), "w") as f:
        json.dump({"rank": rank, "num_workers": workers, "wait_s": waits, "step_s": lengths}, f)
    dist.destroy_process_group()


def spawned(rank, world, args):
    train(args, rank, world)


if __name__ == "__main__":
    if sys.argv[1] == "--spawn":
        n = int(sys.argv[2])
        os.environ["MASTER_ADDR"] = "127.0.0.1"
        os.environ["MASTER_PORT"] = sys.argv[3]
        torch.multiprocessing.spawn(spawned, args=(n, sys.argv[4:]), nprocs=n)
    else:
        train(sys.argv[1:])
