"""Loaders that are thread pools (concurrent.futures): the pool threads'
work items and the waits for their results (docs/python.md, "Thread
pools").

Responsible for: wrapping, in modules gpustarve._hook hands in,
  concurrent.futures._base   Future.result: on a future not yet finished,
                             fetch_begin/fetch_end of class WAIT around
                             the wait (a finished one writes nothing)
  concurrent.futures.thread  _WorkItem.run: fetch_begin/fetch_end of class
                             ITEM around each work item, on the pool thread
                             that runs it; ThreadPoolExecutor.submit: of
                             class WAIT around it (handing a pool its work
                             is the caller's part of getting the data, as a
                             DataLoader's next() sends its workers indices;
                             a woken pool thread takes the CPU right there)
Indices count per process. The analyzer takes a WAIT on the training
thread as data wait (not a step boundary), and a thread with ITEM markers
as a loader thread whose work it cuts at them (docs/report-schema.md,
"Loader numbers").

Must never: change what a future or a work item returns or raises, or
block (the markers never do).
"""
import itertools

from . import _native
from ._frames import hide, wrap


def instrument_base(module):
    fut = getattr(module, "Future", None)
    orig = fut.__dict__.get("result") if fut is not None else None
    lb = _native.lib()
    if orig is None or lb is None or getattr(orig, "_gpustarve_wrapper", False):
        return
    finished = getattr(module, "FINISHED", "FINISHED")
    fetch_begin, fetch_end = lb.gpustarve_fetch_begin, lb.gpustarve_fetch_end
    lid = _native.marks(_native.WAIT)
    count = itertools.count()

    def before(args, kwargs):
        if getattr(args[0], "_state", None) == finished:
            return None  # no wait
        i = next(count)
        fetch_begin(i, lid)
        return ((i, lid), None, None)

    def on_error(ctx, args):
        if ctx is not None:
            fetch_end(*ctx)
    fut.result = wrap(orig, hide(before), fetch_end, hide(on_error), after_star=True)


def _marked(orig, lb, lid):
    """orig with fetch_begin/fetch_end(i, lid) around each call."""
    fetch_begin, fetch_end = lb.gpustarve_fetch_begin, lb.gpustarve_fetch_end
    count = itertools.count()

    def before(args, kwargs):
        i = next(count)
        fetch_begin(i, lid)
        return ((i, lid), None, None)

    def on_error(ctx, args):
        fetch_end(*ctx)
    return wrap(orig, hide(before), fetch_end, hide(on_error), after_star=True)


def instrument_thread(module):
    lb = _native.lib()
    if lb is None:
        return
    item = getattr(module, "_WorkItem", None)
    run = item.__dict__.get("run") if item is not None else None
    if run is not None and not getattr(run, "_gpustarve_wrapper", False):
        item.run = _marked(run, lb, _native.marks(_native.ITEM))
    pool = getattr(module, "ThreadPoolExecutor", None)
    submit = pool.__dict__.get("submit") if pool is not None else None
    if submit is not None and not getattr(submit, "_gpustarve_wrapper", False):
        pool.submit = _marked(submit, lb, _native.marks(_native.WAIT, 1))
