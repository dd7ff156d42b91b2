"""A nanoGPT-style training loop, for tests/python/test_loops.py: no
DataLoader, no markers; `get_batch` maps the token file with np.memmap
anew for every batch (as nanoGPT's train.py does) and gathers random
windows of it, on the training thread.

usage: loop_nanogpt.py TOKENS --steps N [--batch B] [--block T] [--cold]
  TOKENS  a file of uint16 tokens below 256
  --cold  drop TOKENS from the page cache first (posix_fadvise DONTNEED):
          the first batches are read through page faults

The loop is nanoGPT's: forward, fetch the next batch (its data wait),
backward, optimizer step, zero_grad. Writes its own timing (loop_clock.py):
a `loop-part` line for get_batch (each call a unit of the training
thread's loading) and `loop` with every step, its wait being the get_batch
unit's own window (from before the memmap is made to after it is dropped).
"""
import argparse
import os

import numpy as np
import torch
import torch.nn.functional as F

from loop_clock import sim_gpu_from_env, Parts, Steps


class TinyLM(torch.nn.Module):
    def __init__(self, vocab=256, dim=16):
        super().__init__()
        self.emb = torch.nn.Embedding(vocab, dim)
        self.mix = torch.nn.Linear(dim, dim)
        self.head = torch.nn.Linear(dim, vocab)

    def forward(self, x, y):
        h = torch.tanh(self.mix(self.emb(x)))
        logits = self.head(h)
        return F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tokens")
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--block", type=int, default=64)
    ap.add_argument("--cold", action="store_true")
    a = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    if a.cold:
        fd = os.open(a.tokens, os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)
    part = Parts("get_batch", keep=True)

    def get_batch():
        part.begin()
        data = np.memmap(a.tokens, dtype=np.uint16, mode="r")
        ix = torch.randint(len(data) - a.block - 1, (a.batch,))
        x = torch.stack([torch.from_numpy(data[i:i + a.block].astype(np.int64)) for i in ix])
        y = torch.stack([torch.from_numpy(data[i + 1:i + 1 + a.block].astype(np.int64))
                         for i in ix])
        del data  # nanoGPT's get_batch returns here, dropping its memmap
        waited = part.end(emit=False)
        return x, y, waited

    model = TinyLM()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    gpu = sim_gpu_from_env()  # LOOP_SIM_GPU: on the simulated GPU
    steps = Steps()
    X, Y, _ = get_batch()
    for _ in range(a.steps):
        steps.start()
        loss = model(X, Y)
        X, Y, waited = get_batch()  # its wait: the get_batch unit's own clocks
        steps.add_wait(*waited)
        if gpu is not None:
            gpu.step(X.numpy())
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        steps.end()
    part.emit()
    steps.emit(style="nanogpt")


if __name__ == "__main__":
    main()
