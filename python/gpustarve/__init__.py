"""gpustarve's Python side: DataLoader step markers and configuration capture,
steps of any training loop, and the markers a program writes itself.

Loaded automatically in programs started with `gpustarve run` (through the
`sitecustomize` in this folder), or by `import gpustarve`. When the program
imports `torch.utils.data`, every DataLoader is instrumented:

- each `next()` on a DataLoader iterator in the training process writes
  fetch_begin / fetch_end markers around the wait for the batch, and a step
  boundary (step_end of the previous step, step_begin of the next) just
  before it: step k of a loader runs from the fetch of its batch k to the
  fetch of batch k+1;
- each DataLoader's configuration (num_workers, pin_memory, batch_size,
  prefetch_factor, persistent_workers, multiprocessing context, dataset
  class, ...) is written as `config` records when its iterator starts;
- each worker process is tagged with a `role` record (loader_worker, worker
  id, loader id), chaining any worker_init_fn of the program;
- several DataLoaders get distinct loader ids (0, 1, ... in order of first
  use).

Without a DataLoader, steps come from what every training loop does once
per step (an optimizer's step(), else backward()); a thread pool's work
items and the training thread's waits for them, the collate function and a
numpy memmap's life are marked too (docs/python.md, "Steps without a
DataLoader"). Where that is not enough, a program marks its own steps:

    import gpustarve
    with gpustarve.step():          # or @gpustarve.step on a function
        with gpustarve.fetch():     # its wait for data
            x, y = get_batch()
        ...

Environment (applied to every DataLoader, also usable by hand under
`gpustarve run`):

    GPUSTARVE_NUM_WORKERS=N   override num_workers
    GPUSTARVE_PIN_MEMORY=0|1  override pin_memory
    GPUSTARVE_PREFETCH_FACTOR=N, GPUSTARVE_PERSISTENT_WORKERS=0|1
                              override those (DataLoaders with workers only)
    GPUSTARVE_STEPS=N         end the program (SystemExit(0)) when a loader
                              has completed N steps
    GPUSTARVE_PYTHON=0        switch the Python side off

Without libgpustarve.so preloaded, importing this package does nothing,
raises nothing and never imports torch. See docs/python.md.
"""
import sys

from . import _native
from ._marks import fetch, step

__all__ = ["active", "install", "step", "fetch", "step_begin", "step_end", "fetch_begin",
           "fetch_end", "config", "role"]

active = _native.active
step_begin = _native.step_begin
step_end = _native.step_end
fetch_begin = _native.fetch_begin
fetch_end = _native.fetch_end
config = _native.config
role = _native.role

_installed = False


def install():
    """Instrument torch DataLoaders in this process (idempotent). Returns
    True when the instrumentation is in place, False when the process is not
    traced (then nothing was changed). Never raises, never imports torch."""
    global _installed
    if _installed:
        return True
    try:
        if not _native.active():
            return False
        from . import _hook
        _hook.install()
        _installed = True
        return True
    except Exception as e:  # tracing must never break the program
        try:
            sys.stderr.write("gpustarve: Python side disabled: %s: %s\n" % (type(e).__name__, e))
        except Exception:
            pass
        return False


install()
