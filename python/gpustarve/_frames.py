"""Keeping gpustarve's own frames out of what the program sees.

Responsible for: making the functions gpustarve puts between the program
and torch (the DataLoader wrappers, the worker_init_fn wrapper, the import
hook's loader) invisible where Python looks for "who called":

- warnings: their code reports a file name that CPython's warnings machinery
  treats as an import-system frame ("importlib" and "_bootstrap" in it), so
  `warnings.warn(..., stacklevel=N)` from torch skips them and names the
  same file, line and module as without gpustarve; module-based filters
  (`-W ignore::UserWarning:torch.utils.data.dataloader`) match as before;
- tracebacks: an exception passing through a wrapper leaves it without the
  wrappers' entries (drop_own, in the outermost wrapper's except clause,
  before a bare `raise`);
- inspect: the wrapper carries the original's name, qualname, module,
  docstring and `__wrapped__`, so signature, getsource, getsourcelines,
  getmodule and unwrap give torch's. (getsourcefile/getfile on the wrapper
  itself, and a stack walked while a wrapper runs, show the pseudo-file.)

Must never: change what a wrapped function does or returns.
"""
import types

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
