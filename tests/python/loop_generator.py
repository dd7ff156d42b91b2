"""A loop that makes its batches itself, for tests/python/test_loops.py: no
DataLoader, no thread, no memmap, no markers; a generator reads fixed-size
text records from a file and tokenizes them in Python on the training
thread, and each optimizer step takes --accum micro-batches (gradient
accumulation), as a hand-written language-model loop does.

usage: loop_generator.py TEXT --steps N [--batch B] [--accum A] [--compile]
  TEXT       a file of RECORD-byte records of space-separated words
  --compile  the model through torch.compile (torch 2: its first step runs
             the compiler's own processes)

Writes its own timing (loop_clock.py): a `loop-part` line for the
generator (each next(), whole, a unit of the training thread's loading)
and `loop` with every step, its wait being those units. On the
simulated GPU (LOOP_SIM_GPU) each micro-batch is copied to the device and
its kernel run right after next(), before the forward.
"""
import argparse

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
    """Micro-batches of token ids, made on the calling thread (its reads
    timed as file I/O of `part`'s open unit)."""
    vocab = {}
    with open(path, "rb", buffering=0) as f:
        while True:
            raw = part.read(f, RECORD * batch)
            if len(raw) < RECORD * batch:
                f.seek(0)
                raw = part.read(f, RECORD * batch)
            rows = []
            for k in range(batch):
                words = raw[k * RECORD:(k + 1) * RECORD].split()
                ids = [vocab.setdefault(w, len(vocab) % VOCAB) for w in words][:BLOCK]
                rows.append(ids + [0] * (BLOCK - len(ids)))
            yield torch.tensor(rows)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("text")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--batch", type=int, default=24)
    ap.add_argument("--accum", type=int, default=2)
    ap.add_argument("--compile", action="store_true")
    a = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    part = Parts("generator", keep=True)
    model = TinyLM()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    if a.compile:
        model = torch.compile(model)
    gpu = sim_gpu_from_env()  # LOOP_SIM_GPU: on the simulated GPU
    steps = Steps()
    it = batches(a.text, a.batch, part)
    for _ in range(a.steps):
        steps.start()
        for _ in range(a.accum):
            # a unit of the loading and the step's wait: the whole next(),
            # its own clock reads inside. RATIONALE: the report's span runs
            # from the update to the forward and holds them; beside two CPU
            # burners their system calls' returns took 1.3 to 4 ms a step of
            # run-queue delay, which a unit that leaves them out missed
            part.begin(reads_inside=True)
            x = next(it)
            steps.add_wait(*part.end(emit=False, reads_inside=True))
            if gpu is not None:
                gpu.step(x.numpy())
            (model(x) / a.accum).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        steps.end()
    part.emit()
    steps.emit(style="generator")


if __name__ == "__main__":
    main()
