"""PyTorch DataLoader training loops for the advice truth tests
(test_advice_truth.py), one per regime, CPU-only, with a known cost per
batch and per step:

    advice_regimes.py REGIME NUM_WORKERS STEPS [DATA_FILE]

  cpu       each sample burns CPU in the worker (a decode); the trainer
            trains a small model on the CPU (torch, one intra-op thread)
  memmap    each sample is a slice of a numpy memmap of DATA_FILE whose
            pages are dropped from the page cache (posix_fadvise DONTNEED)
            before it is read: page-fault I/O; the trainer sleeps as a GPU
            step would
  receive   large batches, many workers: a sample is ready-made and
            costs its receiver 1.5 ms of CPU to unpickle (as rebuilding a
            large batch does), so a worker only pickles a few bytes, while
            the trainer unpickles every batch alone: its own receive is
            the limit
  mixed     each sample sleeps (storage latency) and burns some CPU; the
            trainer trains on the CPU
  epochs    short epochs (12 batches) of samples that sleep 3 ms
            (latency); each worker's start costs 150 ms (worker_init_fn:
            opening an index, a connection); persistent_workers as
            REGIME_PERSISTENT=1 in the environment says (default False),
            so without it the workers start again each epoch; the trainer
            sleeps as a GPU step would
  collate   the issue's fourth script: persistent_workers, prefetch_factor=4
            and a collate_fn that burns 10 ms of CPU in the worker, each
            sample 1 ms; the trainer trains on the CPU for 4 ms a step. Each
            batch's two tensors come to the trainer as file descriptors from
            the workers' resource-sharer threads, which wait for a CPU;
            REGIME_SHARING=file_system in the environment passes them by
            name (torch.multiprocessing.set_sharing_strategy)
  uneven    each sample sleeps 2 ms (latency), and one batch in 8, scattered,
            60 ms more (a slow shard); the trainer sleeps as a GPU step
            would: the slow batches hold up the ones behind them (a
            DataLoader returns them in order) while the workers, their
            prefetch_factor batches made, idle; REGIME_PREFETCH=N in the
            environment sets prefetch_factor
  collate-spawn  collate with workers started by spawn: each has its own
            torch.multiprocessing, so REGIME_SHARING is set in each worker
            too (worker_init_fn), as the report's advice says for spawn
  stream    an IterableDataset, a stream of records split across the
            workers (get_worker_info: worker k takes every NUM_WORKERS-th):
            each record waits 2 ms (a network read) and burns 2 ms of CPU
            (a decode); the trainer sleeps as a GPU step would
  skip      an IterableDataset split by skipping: each worker reads every
            2 MiB record of DATA_FILE from storage (O_DIRECT positioned
            reads, past the page cache) and keeps every NUM_WORKERS-th,
            which burns 2 ms of CPU (a decode); the trainer sleeps as a
            GPU step would: each worker's reading grows with their count
            (REGIME_SPLIT=1 in the environment: each reads only its own;
            REGIME_CACHED=1: through the page cache, the file's pages
            dropped as the run starts, so the first reader of a record
            pays the storage and the others copy it from the cache)
  skip-stream  skip with the records read in order with readv, as a
            stream of shards is, not with preadv
  threadpool  no DataLoader: batches come from a concurrent.futures thread
            pool of NUM_WORKERS threads (its max_workers), NUM_WORKERS
            batches ahead; 0 loads each batch in the training thread, as a
            get_batch() does; each sample reads 64 KiB of DATA_FILE,
            sleeps (latency) and burns some CPU; the trainer sleeps as a GPU
            step would; steps and fetches are marked with gpustarve's
            marker functions (the loop has nothing else that marks them)
  generator  no DataLoader, no marker: a generator makes each batch in
            Python (4 ms of CPU holding the interpreter lock, as a
            tokenizer does), on the training thread (NUM_WORKERS 0) or in a
            ThreadPoolExecutor of NUM_WORKERS threads, NUM_WORKERS + 1
            batches ahead; the trainer trains a 384x384 layer on the CPU
            (about 10 ms a step on the 2-vCPU VM) and steps an optimizer
            once a step, where the Python side finds its steps

Work is measured in the thread's own CPU time (time.thread_time), so on a
busy machine it takes the same CPU and more wall time, as real work does.
Prints one JSON line with the median and mean step times the loop measured
itself."""
import json
import os
import statistics
import sys
import time

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, IterableDataset, get_worker_info

SAMPLES_PER_BATCH = 4
EPOCH_BATCHES = 12  # the epochs regime's epoch


def slow_start(_):
    """The epochs regime's worker_init_fn: a worker's start-up work."""
    time.sleep(0.15)


def burn(ms):
    """Spend ms of this thread's CPU time."""
    end = time.thread_time() + ms / 1e3
    x = 1.0
    while time.thread_time() < end:
        for _ in range(200):
            x = x * 1.0000001 + 1e-9
    return x


def rebuild(ms):
    """Unpickling a Packed sample: ms of the receiver's CPU."""
    burn(ms)
    return b"sample"


class Packed:
    """A sample whose unpickling costs its receiver CPU, as rebuilding a
    large batch does (RATIONALE: CPU time, not unpacking memory, whose cost
    moved with the allocator's state from run to run)."""

    def __reduce__(self):
        return rebuild, (1.5,)


def share_by(_):
    """The spawned workers' worker_init_fn: REGIME_SHARING in the worker."""
    torch.multiprocessing.set_sharing_strategy(os.environ["REGIME_SHARING"])


def costly_collate(samples):
    """The collate regime's collate_fn: 10 ms of CPU, then the default."""
    burn(10.0)
    return torch.utils.data.default_collate(samples)


class Regime(Dataset):
    def __init__(self, regime, data):
        self.regime, self.data = regime, data
        self.mm = None

    def __len__(self):
        return EPOCH_BATCHES * SAMPLES_PER_BATCH if self.regime == "epochs" else 1 << 20

    def __getitem__(self, i):
        if self.regime == "cpu":
            burn(7.0)  # 28 ms of CPU per batch of 4
            return torch.full((64,), float(i))
        if self.regime == "epochs":
            time.sleep(0.003)
            return torch.full((64,), float(i))
        if self.regime == "collate":
            burn(1.0)
            return torch.full((64,), float(i)), i % 10
        if self.regime == "uneven":
            b = i // SAMPLES_PER_BATCH
            slow = (b * 2654435761) % (1 << 32) < (1 << 32) // 8  # one batch in 8, scattered
            time.sleep(0.002 + (0.060 / SAMPLES_PER_BATCH if slow else 0))
            return torch.full((64,), float(i))
        if self.regime == "mixed":
            time.sleep(0.006)  # 24 ms of storage latency per batch
            burn(2.0)          # 8 ms of CPU per batch
            return torch.full((64,), float(i))
        if self.regime == "memmap":
            if self.mm is None:
                self.fd = os.open(self.data, os.O_RDONLY)
                self.mm = os.fstat(self.fd).st_size
            chunk = 4 << 20  # 4 MiB a sample, 16 MiB a batch
            off = (i * 7919 % (self.mm // chunk)) * chunk
            # cold: out of the page cache, and mapped afresh (a page still
            # mapped from an earlier sample would not be dropped)
            os.posix_fadvise(self.fd, off, chunk, os.POSIX_FADV_DONTNEED)
            mm = np.memmap(self.data, dtype=np.uint8, mode="r", offset=off, shape=(chunk,))
            a = np.array(mm[::4096])  # one byte a page: every page faults
            del mm
            return torch.from_numpy(a.astype(np.float32))
        if self.regime == "receive":
            # pickled by the worker, rebuilt by the trainer's unpickling
            # (collate keeps the list of samples as it is)
            return Packed()
        raise SystemExit("unknown regime %s" % self.regime)


def pool_sample(fd, i):
    """One sample of the threadpool regime: a 64 KiB read, 6 ms of latency,
    1 ms of CPU (the GIL held, as Python decode code holds it)."""
    os.pread(fd, 64 << 10, (i * 7919 % 1024) << 16)
    time.sleep(0.006)
    burn(1.0)
    return i


def pool_batch(fd, b):
    return [pool_sample(fd, b * SAMPLES_PER_BATCH + k) for k in range(SAMPLES_PER_BATCH)]


def threadpool(workers, steps, data):
    """The threadpool regime: returns the step times (seconds)."""
    import collections
    import concurrent.futures
    try:
        import gpustarve
    except ImportError:  # not traced: no markers
        gpustarve = None
    fd = os.open(data, os.O_RDONLY)
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=workers) if workers else None
    ahead = collections.deque()
    times = []
    t0 = time.perf_counter()
    for step in range(steps):
        if gpustarve:
            gpustarve.step_begin(step)
            gpustarve.fetch_begin(step)
        if pool:
            while len(ahead) < workers + 1:
                ahead.append(pool.submit(pool_batch, fd, step + len(ahead)))
            batch = ahead.popleft().result()
        else:
            batch = pool_batch(fd, step)
        if gpustarve:
            gpustarve.fetch_end(step)
        assert len(batch) == SAMPLES_PER_BATCH
        time.sleep(0.008)  # the GPU's step: the trainer sleeps in its sync
        if gpustarve:
            gpustarve.step_end(step)
        t1 = time.perf_counter()
        times.append(t1 - t0)
        t0 = t1
    if pool:
        pool.shutdown(wait=False, cancel_futures=True)
    return times


class Stream(IterableDataset):
    """The stream regime's records, split across the workers."""

    def __iter__(self):
        info = get_worker_info()
        k, n = (info.id, info.num_workers) if info is not None else (0, 1)
        i = k
        while True:
            time.sleep(0.002)  # 8 ms of waiting per batch of 4
            burn(2.0)          # 8 ms of CPU per batch
            yield torch.full((64,), float(i))
            i += n


SKIP_RECORD = 2 << 20  # the skip regime's record


class Skipping(IterableDataset):
    """The skip regime's records: every worker reads them all."""

    def __init__(self, data, stream=False, cached=False):
        self.data, self.stream, self.cached = data, stream, cached

    def __iter__(self):
        import mmap
        info = get_worker_info()
        k, n = (info.id, info.num_workers) if info is not None else (0, 1)
        fd = os.open(self.data, os.O_RDONLY | (0 if self.cached else os.O_DIRECT))
        buf = mmap.mmap(-1, SKIP_RECORD)  # page-aligned, as O_DIRECT needs
        records = os.fstat(fd).st_size // SKIP_RECORD
        split = os.environ.get("REGIME_SPLIT") == "1"
        if split:  # a multiple of n: a worker's records stay its own as they wrap
            records -= records % n
        i = k if split else 0
        while True:
            if self.stream:  # in order, as a stream of shards is read
                if i % records == 0 or split:
                    os.lseek(fd, (i % records) * SKIP_RECORD, os.SEEK_SET)
                os.readv(fd, [buf])
            else:
                os.preadv(fd, [buf], (i % records) * SKIP_RECORD)
            if i % n == k:
                burn(2.0)  # 8 ms of CPU per batch of 4
                yield torch.full((64,), float(i))
            i += n if split else 1


def generator(workers, steps):
    """The generator regime: returns the step times (seconds)."""
    import collections
    import concurrent.futures
    import threading
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = torch.nn.Linear(384, 384)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    lock = threading.Lock()

    def batches():
        i = 0
        while True:
            burn(4.0)  # tokenizing: Python's own CPU
            yield torch.full((64, 384), float(i % 7))
            i += 1
    gen = batches()

    def one():
        with lock:  # a generator runs in one thread at a time
            return next(gen)
    if workers:
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=workers)
        ahead = collections.deque(pool.submit(one) for _ in range(workers + 1))
    times = []
    t0 = time.perf_counter()
    for step in range(steps):
        if workers:
            ahead.append(pool.submit(one))
            b = ahead.popleft().result()
        else:
            b = one()
        model(b).sum().backward()  # one step of training on the CPU
        opt.step()
        opt.zero_grad()
        t1 = time.perf_counter()
        times.append(t1 - t0)
        t0 = t1
    if workers:
        pool.shutdown(wait=False, cancel_futures=True)
    return times


def main():
    regime, workers, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    spawn = regime.endswith("-spawn")
    regime = regime[:-len("-spawn")] if spawn else regime
    data = sys.argv[4] if len(sys.argv) > 4 else None
    if regime in ("threadpool", "generator"):
        times = threadpool(workers, steps, data) if regime == "threadpool" \
            else generator(workers, steps)
        steady = times[len(times) // 5:]
        print(json.dumps({"regime": regime, "workers": workers,
                          "median_step_ms": statistics.median(steady) * 1e3,
                          "mean_step_ms": statistics.mean(steady) * 1e3}))
        return
    cached = regime.startswith("skip") and os.environ.get("REGIME_CACHED") == "1"
    if cached:
        fd = os.open(data, os.O_RDONLY)  # the run starts with the file out of the cache
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)
    if os.environ.get("REGIME_SHARING"):
        torch.multiprocessing.set_sharing_strategy(os.environ["REGIME_SHARING"])
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = torch.nn.Linear(256, 256)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(16, 256)
    extra = {}
    if regime == "epochs":
        extra = dict(worker_init_fn=slow_start,
                     persistent_workers=os.environ.get("REGIME_PERSISTENT") == "1")
    if regime == "collate" and workers:
        extra = dict(collate_fn=costly_collate, persistent_workers=True, prefetch_factor=4)
    if workers and os.environ.get("REGIME_PREFETCH"):
        extra["prefetch_factor"] = int(os.environ["REGIME_PREFETCH"])
    if spawn and workers:
        extra["multiprocessing_context"] = "spawn"
        if os.environ.get("REGIME_SHARING"):
            extra["worker_init_fn"] = share_by
    dataset = (Stream() if regime == "stream"
               else Skipping(data, regime == "skip-stream", cached) if regime.startswith("skip")
               else Regime(regime, data))
    if regime == "receive":
        extra = dict(collate_fn=lambda b: b)
    loader = DataLoader(dataset, batch_size=SAMPLES_PER_BATCH, num_workers=workers, **extra)
    times = []
    t0 = time.perf_counter()
    for step, batch in enumerate(b for _ in range(steps) for b in loader):
        if regime in ("cpu", "mixed", "collate"):
            t, train_s = time.thread_time(), 0.004 if regime == "collate" else 0.012
            while time.thread_time() - t < train_s:  # ~12 ms (collate: 4) of training on the CPU
                opt.zero_grad()
                model(x).sum().backward()
                opt.step()
        elif regime in ("memmap", "epochs", "stream", "skip", "skip-stream"):
            time.sleep(0.005)  # the GPU's step: the trainer sleeps in its sync
        elif regime == "uneven":
            time.sleep(0.008)
        elif regime == "receive":
            time.sleep(0.002)
        t1 = time.perf_counter()
        times.append(t1 - t0)
        t0 = t1
        if step + 1 >= steps:
            break
    steady = times[len(times) // 5:]
    print(json.dumps({"regime": regime, "workers": workers,
                      "median_step_ms": statistics.median(steady) * 1e3,
                      "mean_step_ms": statistics.mean(steady) * 1e3}))


if __name__ == "__main__":
    main()
