"""The marker API of libgpustarve.so, reached through ctypes.

Responsible for: finding the exported gpustarve_* functions in the running
process (they are there only when the process was started by `gpustarve run`,
which preloads the library), and offering them as plain Python functions.

Must never: raise (every function is a no-op without the library), load the
library itself (dlopen of libgpustarve.so would start a second collector), or
import anything outside the standard library.
"""
import ctypes
import os

_lib = None
_loaded = False


def _load():
    global _lib, _loaded
    _loaded = True
    if os.environ.get("GPUSTARVE_PYTHON", "1") == "0":
        return None
    try:
        # RATIONALE: PyDLL keeps the GIL across the call. The marker functions
        # never block (a few hundred ns), so releasing and re-taking the GIL
        # would only cost time and invite a thread switch inside next().
        lib = ctypes.PyDLL(None)  # dlopen(NULL): the program and LD_PRELOAD
        active = lib.gpustarve_active
    except (OSError, AttributeError):
        return None
    try:
        active.argtypes = []
        active.restype = ctypes.c_int
        for name in ("gpustarve_step_begin", "gpustarve_step_end",
                     "gpustarve_fetch_begin", "gpustarve_fetch_end"):
            f = getattr(lib, name)
            f.argtypes = [ctypes.c_uint64, ctypes.c_uint32]
            f.restype = None
        lib.gpustarve_config.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_uint32]
        lib.gpustarve_config.restype = None
        lib.gpustarve_role.argtypes = [ctypes.c_char_p, ctypes.c_uint64, ctypes.c_uint32]
        lib.gpustarve_role.restype = None
        if not active():
            return None
    except (OSError, AttributeError, TypeError):
        return None
    _lib = lib
    return lib


def lib():
    """The library handle, or None when the process is not traced."""
    if not _loaded:
        _load()
    return _lib


def active():
    """True when this process runs under `gpustarve run` and tracing is on."""
    lb = lib()
    try:
        return bool(lb is not None and lb.gpustarve_active())
    except Exception:
        return False


def _u64(x):
    return int(x) & 0xFFFFFFFFFFFFFFFF


def _u32(x):
    return int(x) & 0xFFFFFFFF


def _bytes(s):
    if isinstance(s, bytes):
        return s
    return str(s).encode("utf-8", "replace")


def step_begin(step, loader=0):
    lb = lib()
    if lb is not None:
        lb.gpustarve_step_begin(_u64(step), _u32(loader))


def step_end(step, loader=0):
    lb = lib()
    if lb is not None:
        lb.gpustarve_step_end(_u64(step), _u32(loader))


def fetch_begin(batch, loader=0):
    lb = lib()
    if lb is not None:
        lb.gpustarve_fetch_begin(_u64(batch), _u32(loader))


def fetch_end(batch, loader=0):
    lb = lib()
    if lb is not None:
        lb.gpustarve_fetch_end(_u64(batch), _u32(loader))


def config(key, value, loader=0):
    lb = lib()
    if lb is not None:
        lb.gpustarve_config(_bytes(key), _bytes(value), _u32(loader))


def role(name, worker=0, loader=0):
    lb = lib()
    if lb is not None:
        lb.gpustarve_role(_bytes(name), _u64(worker), _u32(loader))
