"""Keeping gpustarve's own frames out of what the program sees.

Responsible for: wrap(), the one way gpustarve puts a function between the
program and torch (the DataLoader methods, the worker_init_fn, the batch
fetch in workers, the import hook's exec_module), and making what it puts
there invisible where Python looks for "who called":

- with the extension (gpustarve._cwrap, python/gpustarve/_cwrap.c, found by
  gpustarve._native): the wrapper is a C object that calls its hooks, then
  the original, from C, so no gpustarve frame is on the stack while torch's
  or the program's code runs: inspect.stack(), sys._getframe, traceback and
  the frames warnings walk are the untraced ones; a traceback through it is
  untouched; its __class__ and every attribute it does not hold itself are
  the original's, so inspect.isfunction, getfile, getsourcefile,
  getsourcelines, signature, getmodule and unwrap answer as for the original;
- without it (another interpreter, a free-threaded build, the file missing:
  gpustarve._torch says so once): a Python function with the original's
  name, qualname, module, docstring and `__wrapped__`, whose code reports a
  file name CPython's warnings machinery skips (so `warnings.warn(...,
  stacklevel=N)` from torch names the same file, line and module as
  untraced and module-based filters match as before) and which drops its own
  traceback entries (drop_own); getfile/getsourcefile on it, and a stack
  walked while it runs, show the pseudo-file.

The hooks themselves are hidden the same way (hide): their frames exist only
while they run, and a warning or traceback from inside one skips them.

Must never: change what a wrapped function does, returns or raises.
"""
import sys
import types

from . import _native

# RATIONALE: CPython (3.8-3.13, _warnings.c is_internal_frame, and
# warnings.py _is_internal_frame) skips frames whose file name contains both
# words when it walks `stacklevel` frames up.
HIDDEN_FILE = "<gpustarve wrapper: skipped by warnings like importlib._bootstrap>"


def hide(fn):
    """fn, rebuilt with its code reporting HIDDEN_FILE."""
    code = fn.__code__.replace(co_filename=HIDDEN_FILE)
    g = types.FunctionType(code, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    g.__kwdefaults__ = fn.__kwdefaults__
    g.__qualname__ = fn.__qualname__
    g.__doc__ = fn.__doc__
    g.__module__ = fn.__module__
    g.__dict__.update(fn.__dict__)
    return g


def drop_own(exc):
    """In an except clause of a hidden function: drop the traceback entries
    of hidden functions at its head (the exception then propagates as if
    they had not been there)."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename == HIDDEN_FILE:
        tb = tb.tb_next
    exc.__traceback__ = tb


def frame_free():
    """True when wrap() makes frame-free wrappers; else cwrap_why() says why."""
    return _native.cwrap() is not None


def cwrap_why():
    return _native.cwrap_why()


def wrap(orig, before=None, after=None, on_error=None, reduce=None, after_star=False):
    """A callable standing for orig (gpustarve._cwrap.Wrapper's contract,
    python/gpustarve/_cwrap.c): before(args, kwargs) -> None or (ctx, args,
    kwargs); orig(*args, **kwargs); after(ctx, args, result) (after(*ctx)
    with after_star, nothing when ctx is None) or, when orig raised,
    on_error(ctx, args), then orig's exception as it was. Binds as a method;
    pickled, it is orig's qualified name, or `reduce`."""
    c = _native.cwrap()
    if c is not None:
        return c.Wrapper(orig, before, after, on_error, reduce, after_star)
    if reduce is not None:
        return _PyCall(orig, before, after, on_error, reduce, after_star)
    return _py_wrapper(orig, before, after, on_error, after_star)


def _unraisable(hook):
    """A hook raised while orig's exception propagates: said as CPython says
    an unraisable exception (the extension calls PyErr_WriteUnraisable)."""
    try:
        import traceback
        sys.stderr.write("Exception ignored in: %r\n" % (hook,))
        traceback.print_exc()
    except Exception:
        pass


def _py_wrapper(orig, before, after, on_error, after_star=False):
    def wrapper(*args, **kwargs):
        ctx = None
        if before is not None:
            r = before(args, kwargs or None)
            if r is not None:
                ctx, a, k = r
                if a is not None:
                    args, kwargs = a, (k or {})
        try:
            res = orig(*args, **kwargs)
        except BaseException as e:
            if on_error is not None:
                try:
                    on_error(ctx, args)
                except Exception:
                    _unraisable(on_error)
            drop_own(e)
            raise
        if after is None:
            pass
        elif after_star:
            if ctx is not None:
                after(*ctx)
        else:
            after(ctx, args, res)
        return res
    for name in ("__name__", "__qualname__", "__module__", "__doc__"):
        try:
            setattr(wrapper, name, getattr(orig, name))
        except (AttributeError, TypeError):
            pass
    wrapper.__wrapped__ = orig
    wrapper._gpustarve_wrapper = True
    return hide(wrapper)


class _PyCall(object):
    """The Python wrapper of a callable that must pickle as `reduce` (the
    worker_init_fn a spawned worker unpickles). Its __call__ is the
    closure's of _py_wrapper, spelled on attributes (one frame, not two)."""
    __slots__ = ("orig", "before", "after", "on_error", "reduce", "after_star", "__dict__")

    def __init__(self, orig, before, after, on_error, reduce, after_star=False):
        self.orig, self.before, self.after = orig, before, after
        self.on_error, self.reduce, self.after_star = on_error, reduce, after_star

    def __call__(self, *args, **kwargs):
        ctx = None
        if self.before is not None:
            r = self.before(args, kwargs or None)
            if r is not None:
                ctx, a, k = r
                if a is not None:
                    args, kwargs = a, (k or {})
        try:
            res = self.orig(*args, **kwargs)
        except BaseException as e:
            if self.on_error is not None:
                try:
                    self.on_error(ctx, args)
                except Exception:
                    _unraisable(self.on_error)
            drop_own(e)
            raise
        if self.after is None:
            pass
        elif self.after_star:
            if ctx is not None:
                self.after(*ctx)
        else:
            self.after(ctx, args, res)
        return res

    def __reduce__(self):
        return self.reduce


_PyCall.__call__ = hide(_PyCall.__call__)
