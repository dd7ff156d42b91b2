"""gpustarve.step() and gpustarve.fetch(): the markers a program writes
around its own training step and its own wait for data, where nothing
gpustarve finds by itself says where they are (docs/python.md, "Marking
your own steps").

Responsible for: one object per call that is both a context manager and a
decorator, writing step_begin/step_end (or fetch_begin/fetch_end) of the
`explicit` class (_native.EXPLICIT) on the calling thread, numbered per
loader across the process; an inner span of the same kind inside an open
one on the same thread writes nothing (a decorated function called inside
a `with gpustarve.step():` is one step, not two).

Must never: raise because of gpustarve, change what the decorated function
returns or raises, or cost more than a load and a branch when the process
is not traced (the decorator then returns the function itself).
"""
import itertools
import threading

from . import _native
from ._frames import hide, wrap

_local = threading.local()
_counters = {}
_lock = threading.Lock()


def _counter(kind, loader):
    c = _counters.get((kind, loader))
    if c is None:
        with _lock:
            c = _counters.setdefault((kind, loader), itertools.count())
    return c


class _Span(object):
    """Markers of one kind around a block or a function (docstring of
    gpustarve.step)."""
    __slots__ = ("_kind", "_loader", "_begin", "_end")

    def __init__(self, kind, loader, begin, end):
        self._kind = kind
        self._loader = _native.marks(_native.EXPLICIT, loader)
        self._begin, self._end = begin, end

    def _open(self):
        depth = getattr(_local, self._kind, None)
        if depth is None:
            depth = [0, 0]  # nesting, index of the open span
            setattr(_local, self._kind, depth)
        depth[0] += 1
        if depth[0] == 1 and _native.lib() is not None:
            depth[1] = next(_counter(self._kind, self._loader))
            if self._kind == "step":
                _native.tag_trainer(self._loader & 0xFFFFFF)
            self._begin(depth[1], self._loader)
        return depth

    def _close(self):
        depth = getattr(_local, self._kind, None)
        if not depth or depth[0] <= 0:
            return
        depth[0] -= 1
        if depth[0] == 0 and _native.lib() is not None:
            self._end(depth[1], self._loader)

    def __enter__(self):
        try:
            self._open()
        except Exception:
            pass
        return self

    def __exit__(self, et, ev, tb):
        try:
            self._close()
        except Exception:
            pass
        return False

    def __call__(self, fn):
        if _native.lib() is None:
            return fn
        span = self

        def before(args, kwargs):
            try:
                span._open()
            except Exception:
                pass
            return None

        def after(ctx, args, r=None):
            try:
                span._close()
            except Exception:
                pass
        after = hide(after)
        return wrap(fn, hide(before), after, after)


def step(fn=None, loader=0):
    """One training step, as a context manager or a decorator:

        with gpustarve.step():          @gpustarve.step
            x, y = get_batch()          def train_step(x, y): ...
            ...

    The report then cuts steps here, before anything it finds by itself
    (a DataLoader's batches, optimizer steps: docs/python.md). Without the
    collector (not run by `gpustarve run`) it does nothing."""
    span = _Span("step", loader, _native.step_begin, _native.step_end)
    return span(fn) if fn is not None else span


def fetch(fn=None, loader=0):
    """The training thread's wait for one batch, as a context manager or a
    decorator (`with gpustarve.fetch(): x, y = get_batch()`): the report's
    data wait, and its parts (docs/report-schema.md, "Measured time")."""
    span = _Span("fetch", loader, _native.fetch_begin, _native.fetch_end)
    return span(fn) if fn is not None else span
