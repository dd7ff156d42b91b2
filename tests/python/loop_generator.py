"""A loop that makes its batches itself, for tests/python/test_loops.py: no
DataLoader, no thread, no memmap, no markers; a generator reads fixed-size
text records from a file and tokenizes them in Python on the training
thread, and each optimizer step takes --accum micro-batches (gradient
accumulation), as a hand-written language-model loop does.

usage: loop_generator.py TEXT --steps N [--batch B] [--accum A] [--threads 1]
  TEXT       a file of RECORD-byte records of space-separated words
  --threads  1: the generator runs in a ThreadPoolExecutor thread, one
             micro-batch ahead (what moving the loading off the training
             thread by hand looks like)

Writes its own timing (loop_clock.py): a `loop-part` line for the
generator (each next() a unit of the training thread's loading) and `loop`
with every step, its wait being its next() calls, whole. On the
simulated GPU (LOOP_SIM_GPU) each micro-batch is copied to the device and
its kernel run right after next(), before the forward.
"""
import argparse
import collections
import concurrent.futures

import torch
import torch.nn.functional as F

from loop_clock import sim_gpu_from_env, Parts, Steps

RECORD = 1024
VOCAB = 512
BLOCK = 64


class TinyLM(torch.nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.emb = torch.nn.Embedding(VOCAB, dim)
        self.head = torch.nn.Linear(dim, VOCAB)

    def forward(self, x):
        logits = self.head(torch.tanh(self.emb(x[:, :-1])))
        return F.cross_entropy(logits.reshape(-1, VOCAB), x[:, 1:].reshape(-1))


def batches(path, batch, part):
    """Micro-batches of token ids, made on the calling thread: each one's
    work (its read and its tokenizing) is one unit of `part`."""
    vocab = {}
    with open(path, "rb", buffering=0) as f:
        while True:
            part.begin()
            raw = part.read(f, RECORD * batch)
            if len(raw) < RECORD * batch:
                f.seek(0)
                raw = part.read(f, RECORD * batch)
            rows = []
            for k in range(batch):
                words = raw[k * RECORD:(k + 1) * RECORD].split()
                ids = [vocab.setdefault(w, len(vocab) % VOCAB) for w in words][:BLOCK]
                rows.append(ids + [0] * (BLOCK - len(ids)))
            x = torch.tensor(rows)
            part.end(emit=False)
            yield x


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("text")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--batch", type=int, default=24)
    ap.add_argument("--accum", type=int, default=2)
    ap.add_argument("--threads", type=int, choices=(0, 1), default=0)
    a = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    part = Parts("generator", keep=True)
    model = TinyLM()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    gpu = sim_gpu_from_env()  # LOOP_SIM_GPU: on the simulated GPU
    steps = Steps()
    it = batches(a.text, a.batch, part)
    if a.threads:
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
        gen = it
        ahead = collections.deque(pool.submit(next, gen) for _ in range(2))

        def pooled():
            while True:
                f = ahead.popleft()
                ahead.append(pool.submit(next, gen))
                yield f.result()
        it = pooled()
    for _ in range(a.steps):
        steps.start()
        for _ in range(a.accum):
            steps.wait_begin()  # its wait: the whole next(), as a user times it
            x = next(it)
            steps.wait_end()
            if gpu is not None:
                gpu.step(x.numpy())
            (model(x) / a.accum).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        steps.end()
    if a.threads:
        pool.shutdown(wait=True, cancel_futures=True)
    part.emit()
    steps.emit(style="generator")


if __name__ == "__main__":
    main()
