"""Scenario runs with known answers, written as real trace files.

Every scenario: trainer pid 100 (main thread 100), steps of 100 ms from
T0 = 2 s, a slow first step (warm-up). Times in ns.
"""
from conftest import MS, PAGEABLE, PINNED, Scenario

T0 = 2000 * MS


def _steps100(nsteps, step_ms=100):
    """The warm-up step (300 ms from T0), then nsteps steps of step_ms (100) ms."""
    d = int(step_ms * MS)
    return [(T0, T0 + 300 * MS)] + [(T0 + 300 * MS + i * d, T0 + 300 * MS + (i + 1) * d)
                                    for i in range(nsteps)]


def _markers(tr, t0, t1, n, fetch=None):
    tr.ev(100, "step_begin", ts=t0, aux=n)
    if fetch:
        tr.ev(100, "fetch_begin", ts=t0, aux=n)
        tr.ev(100, "fetch_end", ts=t0 + fetch, aux=n)
    tr.ev(100, "step_end", ts=t1, aux=n)


def loader_bound(nsteps=20, workers=2, marker_steps=True, late_gpu=False, step_ms=100, wait_ms=40,
                 jitter_ms=0, pin_memory="True", extra_config=(), gpu=True, epochs=1,
                 stall_every=0, stall_ms=0):
    """The GPU waits 40 ms of every 100 ms step on a worker pipe; each worker
    needs ~190-200 ms per batch (150 ms reads, 10 ms open/stat, ~40 ms CPU).
    step_ms / wait_ms change the measured steps; jitter_ms spreads their
    lengths (deterministically) by up to +-jitter_ms, in the kernel time.
    pin_memory and extra_config ((key, value) pairs) are the loader's config
    records, spelt as given (the Python side writes booleans as 1/0).
    gpu=False: a CPU-only trainer (no GPU, no CUDA; the step's other 60 ms
    are the training thread's own work). epochs=E: each worker is a new
    process every epoch (DataLoader workers without persistent_workers),
    saying the same worker id, with 10 / E batches each. stall_every=K: every
    K-th measured step waits stall_ms longer (a loader that stalls now and
    then: the mean step grows, the median does not)."""
    sc = Scenario()
    tr = sc.proc(100, 1, "python train.py --epochs 1")
    tr.ev(100, "thread", ts=T0 - 5 * MS, str="MainThread", aux=100)
    for k, v in (("num_workers", workers), ("pin_memory", pin_memory),
                 ("batch_size", 32)) + tuple(extra_config):
        tr.config(100, T0 - 2 * MS, k, v)
    if gpu:
        tr.ev(100, "gpu_device", ts=T0 - 3 * MS, dev=0, str="NVIDIA H200", bytes=141 << 30,
              aux=132, aux2=90)
    gpu_later = []
    # warm-up step: 300 ms, waiting 250 ms
    steps = [(T0, T0 + 300 * MS, 250 * MS)]
    t = T0 + 300 * MS
    for i in range(nsteps):
        d = step_ms * MS + int(((i * 7919) % 11 - 5) / 5 * jitter_ms * MS)
        stall = stall_ms * MS if stall_every and i % stall_every == stall_every - 1 else 0
        d += stall
        steps.append((t, t + d, wait_ms * MS + stall))
        t += d
    for n, (a, b, wait) in enumerate(steps):
        if marker_steps:
            tr.ev(100, "step_begin", ts=a, aux=n)
            tr.ev(100, "fetch_begin", ts=a, aux=n)
        tr.poll(100, a, a + wait - 1 * MS)
        tr.pipe_read(100, a + wait - 1 * MS, a + wait, nbytes=4096)
        if marker_steps:
            tr.ev(100, "fetch_end", ts=a + wait, aux=n)
        if gpu:
            tr.cuda_copy(100, a + wait, a + wait + MS // 10, 8 << 20, kind=PINNED)
        work = [("copy", a + wait, a + wait + 5 * MS), ("kernel", a + wait + 5 * MS, b)]
        if marker_steps:
            tr.ev(100, "step_end", ts=b, aux=n)
        if not gpu:
            pass
        elif late_gpu:
            gpu_later.append(work)
            if len(gpu_later) > 3:  # CUPTI buffers: GPU records 3 steps late
                flush_gpu(tr, gpu_later.pop(0))
        else:
            flush_gpu(tr, work)
        tr.frame()
    for g in gpu_later:
        flush_gpu(tr, g)
    tr.ev(100, "exit", ts=t + MS, aux=0, aux2=0)
    per_epoch = 10 // epochs
    for e in range(epochs):
        for w in range(workers):
            pid = 101 + e * workers + w
            wp = sc.proc(pid, 100, "python train.py --epochs 1", forked=True)
            s = T0 + e * per_epoch * 200 * MS
            wp.ev(pid, "role", ts=s - MS, str="loader_worker", aux=w, aux2=0)
            for j in range(e * per_epoch, (e + 1) * per_epoch):
                wp.pipe_read(pid, s, s + MS // 10, fd=3)
                wp.ev(pid, "openat", ts=s + MS // 10, dur=5 * MS - MS // 10, fd=9, fdk=1,
                      str="/data/img%d_%d.jpg" % (w, j), ret=9, aux=0, aux2=0)
                wp.ev(pid, "fstat", ts=s + 5 * MS, dur=5 * MS, fd=9, fdk=1,
                      str="/data/img%d_%d.jpg" % (w, j), ret=0)
                for r in range(5):
                    wp.file_read(pid, s + 10 * MS + r * 30 * MS, s + 40 * MS + r * 30 * MS,
                                 1 << 20, path="/data/img%d_%d.jpg" % (w, j), off=r << 20)
                s += 200 * MS
            wp.ev(pid, "faults", ts=s, aux=pid, aux2=7)
    return sc


def flush_gpu(tr, gpu):
    for what, a, b in gpu:
        if what == "copy":
            tr.gpu_copy(a, b, 8 << 20, kind=PINNED)
        else:
            tr.kernel(a, b)


def gpu_bound(nsteps=20):
    """2 ms data wait, 3 ms pinned copy, 95 ms of kernels on two overlapping
    streams (one NCCL)."""
    sc = Scenario()
    tr = sc.proc(100, 1, "python train.py")
    tr.config(100, T0 - 2 * MS, "num_workers", 4)
    tr.config(100, T0 - 2 * MS, "pin_memory", "True")
    steps = _steps100(nsteps)
    for n, (a, b) in enumerate(steps):
        _markers(tr, a, b, n, fetch=2 * MS)
        tr.poll(100, a, a + 2 * MS)
        tr.gpu_copy(a + 2 * MS, a + 5 * MS, 8 << 20, kind=PINNED)
        tr.kernel(a + 5 * MS, a + 60 * MS, stream=7)
        tr.kernel(a + 40 * MS, b, name="ncclKernel_AllReduce_RING_LL_Sum_float", stream=9)
        tr.frame()
    return sc


def pageable(nsteps=20):
    """A pageable cudaMemcpy of 64 MB per step: 10 ms staging (host blocked,
    GPU idle), then 10 ms of pageable H2D on the GPU; kernels fill the rest."""
    sc = Scenario()
    tr = sc.proc(100, 1, "python train.py")
    tr.config(100, T0 - 2 * MS, "num_workers", 4)
    tr.config(100, T0 - 2 * MS, "pin_memory", "False")
    steps = _steps100(nsteps)
    for n, (a, b) in enumerate(steps):
        _markers(tr, a, b, n, fetch=2 * MS)
        tr.poll(100, a, a + 2 * MS)
        tr.cuda_copy(100, a + 2 * MS, a + 22 * MS, 64 << 20, kind=PAGEABLE)
        tr.gpu_copy(a + 12 * MS, a + 22 * MS, 64 << 20, kind=PAGEABLE)
        tr.kernel(a + 22 * MS, b)
        tr.frame()
    return sc


def host_bound(nsteps=20):
    """Kernels 40 ms per step, 2 ms data wait, the rest the host."""
    sc = Scenario()
    tr = sc.proc(100, 1, "python train.py")
    steps = _steps100(nsteps)
    for n, (a, b) in enumerate(steps):
        _markers(tr, a, b, n, fetch=2 * MS)
        tr.poll(100, a, a + 2 * MS)
        tr.kernel(a + 2 * MS, a + 42 * MS)
        tr.frame()
    return sc


def fetch_over_gpu(nsteps=20):
    """A 40 ms fetch (a poll inside fetch markers) at the start of every
    100 ms step, whose first 10 ms the previous step's kernel still runs
    (it ends 10 ms into the next step): fetch time 40 ms, data wait 30 ms;
    then 5 ms of host and the step's kernel."""
    sc = Scenario()
    tr = sc.proc(100, 1, "python train.py")
    steps = _steps100(nsteps)
    for n, (a, b) in enumerate(steps):
        _markers(tr, a, b, n, fetch=40 * MS)
        tr.poll(100, a, a + 40 * MS)
        tr.kernel(a + 45 * MS, b + 10 * MS)
        tr.frame()
    return sc


def no_gpu(nsteps=20):
    """No GPU at all: the training thread waits 30 ms of 100 on a pipe."""
    sc = Scenario()
    tr = sc.proc(100, 1, "python train_cpu.py")
    steps = _steps100(nsteps)
    for n, (a, b) in enumerate(steps):
        _markers(tr, a, b, n, fetch=30 * MS)
        tr.poll(100, a, a + 30 * MS)
        tr.frame()
    return sc


def nvtx(nsteps=20, use_start_end=False):
    """PyTorch profiler style: ProfilerStep#N ranges, a DataLoader __next__
    range of 30 ms with the file reads inside (num_workers=0), kernels."""
    sc = Scenario()
    tr = sc.proc(100, 1, "python train.py")
    steps = _steps100(nsteps)
    for n, (a, b) in enumerate(steps):
        name = "ProfilerStep#%d" % n
        if use_start_end:
            tr.ev(100, "nvtx_start", ts=a, str="train_step", aux=0, aux2=1000 + n)
        else:
            tr.ev(100, "nvtx_push", ts=a, str=name, aux=0)
        tr.ev(100, "nvtx_push", ts=a, aux=0,
              str="enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__")
        tr.file_read(100, a + 1 * MS, a + 29 * MS, 4 << 20)
        tr.ev(100, "nvtx_pop", ts=a + 30 * MS, aux=0)
        tr.ev(100, "nvtx_push", ts=a + 31 * MS, str="aten::linear", aux=0)
        tr.ev(100, "nvtx_pop", ts=a + 32 * MS, aux=0)
        tr.kernel(a + 30 * MS, b)
        if use_start_end:
            tr.ev(100, "nvtx_end", ts=b, aux2=1000 + n)
        else:
            tr.ev(100, "nvtx_pop", ts=b, aux=0)
        tr.frame()
    return sc


def inferred(nsteps=20):
    """No markers, no NVTX: each step starts with a 30 ms wait on the worker
    pipe (poll + reads), then an H2D copy call and kernels."""
    sc = Scenario()
    tr = sc.proc(100, 1, "python train.py")
    steps = _steps100(nsteps + 1)
    for n, (a, b) in enumerate(steps):
        wait = 250 * MS if n == 0 else 30 * MS
        tr.poll(100, a, a + wait - MS)
        tr.pipe_read(100, a + wait - MS, a + wait - MS // 2)
        tr.pipe_read(100, a + wait - MS // 2, a + wait, nbytes=1 << 20)
        tr.cuda_copy(100, a + wait, a + wait + MS // 10, 8 << 20, kind=PINNED)
        tr.gpu_copy(a + wait, a + wait + 4 * MS, 8 << 20, kind=PINNED)
        tr.kernel(a + wait + 4 * MS, b - 1 * MS)
        tr.frame()
    return sc


def file_bursts(nsteps=40, split=(0, 1), split_ms=5):
    """No markers, no GPU: a nanoGPT loop whose training thread maps its
    token file once a step (a burst of file events at the step's start);
    in step n with n % m < k, split = (k, m), the mapping's release comes
    split_ms later, past the burst gap: a second burst on the same file
    (a get_batch preempted between the two on a busy machine)."""
    sc = Scenario()
    tr = sc.proc(100, 1, "python train.py")
    for n, (a, b) in enumerate(_steps100(nsteps)):
        tr.file_read(100, a, a + MS // 5, 4096, path="/data/tokens.bin")
        if n % split[1] < split[0]:
            tr.file_read(100, a + split_ms * MS, a + split_ms * MS + MS // 10, 4096,
                         path="/data/tokens.bin")
        tr.frame()
    return sc


def no_steps():
    """A process that reads a few files: nothing to cut steps from."""
    sc = Scenario()
    tr = sc.proc(100, 1, "cat /data/x")
    for i in range(5):
        tr.file_read(100, T0 + i * MS, T0 + i * MS + MS // 2, 4096)
    return sc


def measured_load(nsteps=20, other_ms=120, host=True, step_ms=100):
    """A CPU-only trainer on 2 CPUs (cpu_limits) that loads its own batches
    (num_workers=0): each 100 ms step a 60 ms fetch (a 59 ms file read, 1 ms
    of CPU) and 40 ms of training CPU, its clocks sampled at its markers
    and periodically (no run-queue delay). host=True: host_cpu records at
    each step begin, the machine busy with the trainer's 41 ms and other
    processes' other_ms per step (over 2 CPUs: other_ms / 100 cores).
    step_ms (>= 70) stretches the steps: the fetch stays 60 ms, the
    training CPU takes the rest."""
    sc = Scenario()
    tr = sc.proc(100, 1, "python train_cpu.py")
    tr.ev(100, "cpu_limits", ts=T0 - 5 * MS, aux=2, aux2=0, bytes=2)
    tr.config(100, T0 - 2 * MS, "num_workers", 0)
    steps = _steps100(nsteps, step_ms)
    marker = lambda: 100 | 1 << 32 | (2 | 4) << 40
    periodic = 100 | 0 << 32 | 1 << 40
    cpu = busy = idle = 0
    for n, (a, b) in enumerate(steps):
        if host:
            tr.ev(100, "host_cpu", ts=a, bytes=busy, aux=idle, aux2=2)
        step = (b - a) // MS
        own = step - 59  # 1 ms receiving + the rest of the step training
        other = min(other_ms * step // 100, 2 * step - own)
        busy += (own + other) * MS
        idle += (2 * step - own - other) * MS
        tr.ev(100, "step_begin", ts=a, aux=n)
        tr.ev(100, "cpu", ts=a, bytes=cpu, aux=marker())
        tr.ev(100, "fetch_begin", ts=a, aux=n)
        tr.file_read(100, a, a + 59 * MS, 1 << 20, off=n << 20)
        tr.ev(100, "cpu", ts=a + 60 * MS, bytes=cpu + MS, aux=marker())
        tr.ev(100, "fetch_end", ts=a + 60 * MS, aux=n)
        tr.ev(100, "cpu", ts=a + 80 * MS, bytes=cpu + 21 * MS, aux=periodic, aux2=0)
        cpu += own * MS
        tr.ev(100, "cpu", ts=b, bytes=cpu, aux=marker())
        tr.ev(100, "step_end", ts=b, aux=n)
        tr.frame()
    if host:
        tr.ev(100, "host_cpu", ts=steps[-1][1], bytes=busy, aux=idle, aux2=2)
    return sc
