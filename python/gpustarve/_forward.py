"""The loop's own batch preparation: the time a training thread spends
between an update of its model and the model's next forward
(docs/python.md, "Steps without a DataLoader").

A loop that makes its batches itself (a generator that reads and tokenizes
a file, a `next(it)` over the program's own iterator) does it on the
training thread, after the last update and before the forward that takes
the batch. gpustarve._optim marks each update (the lead optimizer's
step(), a backward()) with a step_end and calls arm(); the first
torch.nn.Module forward on that thread after it writes a fetch_end of class
FORWARD. The analyzer takes the span from that step_end to it as the
thread's data wait when nothing else in it waited for data (a DataLoader's
fetch, a pool's result, a memmap's life).

Responsible for: one global forward pre-hook
(torch.nn.modules.module.register_module_forward_pre_hook), registered
while some thread is armed and removed at its first forward, so that every
other module call runs as untraced (torch's fast path, without global
hooks); the armed threads.

Must never: import torch (gpustarve._hook hands in the module), change a
module's input (the hook returns None), raise into the program, write a
marker in another process (a forked child starts disarmed: at_fork), or
keep the hook registered once no thread is armed.
"""
import os
import threading

from . import _native
from ._frames import hide

_FWD = _native.marks(_native.FORWARD)

_register = None    # torch.nn.modules.module.register_module_forward_pre_hook
_lock = threading.Lock()
_armed = set()      # idents of the threads waiting for their first forward
_handle = None      # the hook's handle while registered


def _pre_hook(module, args):
    ident = threading.get_ident()
    if ident not in _armed:
        return None
    global _handle
    try:
        with _lock:
            if ident not in _armed:
                return None
            _armed.discard(ident)
            if not _armed and _handle is not None:
                h, _handle = _handle, None
                h.remove()
        _native.fetch_end(0, _FWD)
    except Exception:  # never into the program's forward
        pass
    return None


_pre_hook = hide(_pre_hook)


def arm():
    """The calling thread has just updated its model: mark its first
    forward from now on."""
    global _handle
    if _register is None:
        return
    ident = threading.get_ident()
    if ident in _armed:
        return
    with _lock:
        _armed.add(ident)
        if _handle is None:
            try:
                _handle = _register(_pre_hook)
            except Exception:
                _armed.discard(ident)


def _after_fork_child():
    # the child's threads are not the ones that armed; its hook goes
    global _lock, _handle
    _lock = threading.Lock()
    _armed.clear()
    h, _handle = _handle, None
    if h is not None:
        try:
            h.remove()
        except Exception:
            pass


def instrument_module(module):
    """torch.nn.modules.module: where the global forward pre-hook is
    registered (torch 1.13 and 2.x)."""
    global _register
    reg = getattr(module, "register_module_forward_pre_hook", None)
    if reg is None or _register is not None:
        return
    _register = reg
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_after_fork_child)
