"""A loader inside the training thread that maps its data: a numpy memmap
from its creation to its release (nanoGPT's get_batch maps the token file
anew for every batch; docs/python.md, "Steps without a DataLoader").

Responsible for: wrapping numpy.memmap.__new__ (numpy.core.memmap in numpy
1.x, numpy._core.memmap in 2.x, handed in by gpustarve._hook): a
fetch_begin of class LOAD before the file is opened and mapped, and a
fetch_end when the memmap object is released (weakref.finalize, which runs
in the thread that drops it, before the mapping is unmapped), or at once
when __new__ raises. A memmap opened to write a new file (mode w+) is not
a load and writes nothing. The analyzer takes a LOAD on the training
thread as data wait when it is short (a memmap kept for the run is a
dataset held open, not a batch's load: docs/report-schema.md, "Steps"),
and cuts its time into the parts of a loader's batch.

Must never: import numpy (it receives the module), change what memmap()
returns or raises, keep the memmap alive, or run a marker at the
interpreter's exit (the finalizer does not run then).
"""
import itertools
import weakref

from . import _native
from ._frames import hide, wrap


def _mode(args, kwargs):
    """memmap(subtype, filename, dtype, mode, ...)'s mode."""
    if kwargs and "mode" in kwargs:
        return kwargs["mode"]
    return args[3] if len(args) > 3 else "r+"


def instrument(module):
    cls = getattr(module, "memmap", None)
    raw = cls.__dict__.get("__new__") if cls is not None else None
    lb = _native.lib()
    if not isinstance(raw, staticmethod) or lb is None:
        return
    orig = raw.__func__
    if getattr(orig, "_gpustarve_wrapper", False):
        return
    fetch_begin, fetch_end = lb.gpustarve_fetch_begin, lb.gpustarve_fetch_end
    lid = _native.marks(_native.LOAD)
    count = itertools.count()

    def before(args, kwargs):
        if _mode(args, kwargs) in ("w+", "write"):
            return None
        i = next(count)
        fetch_begin(i, lid)
        return (i, None, None)

    def after(i, args, r):
        if i is None:
            return
        try:
            f = weakref.finalize(r, fetch_end, i, lid)
            f.atexit = False
        except TypeError:  # not weakly referable: no release to wait for
            fetch_end(i, lid)

    def on_error(i, args):
        if i is not None:
            fetch_end(i, lid)
    cls.__new__ = staticmethod(wrap(orig, hide(before), hide(after), hide(on_error)))
