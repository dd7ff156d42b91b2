"""The marker API of libgpustarve.so, reached through ctypes.

Responsible for: finding the exported gpustarve_* functions in the running
process (they are there only when the process was started by `gpustarve run`,
which preloads the library), and offering them as plain Python functions.

Also finds gpustarve's CPython extension (gpustarve._cwrap, the frame-free
call wrapper of python/gpustarve/_cwrap.c): it lies next to the preloaded
libgpustarve.so (build/ in the build tree, lib/gpustarve/ installed).

Must never: raise (every function is a no-op without the library), load the
library itself (dlopen of libgpustarve.so would start a second collector),
load the extension into an interpreter its stable ABI does not fit (not
CPython, older than 3.8, a free-threaded build), or import anything outside
the standard library.
"""
import ctypes
import os
import sys

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
        try:  # a collector before API version 2 has none: step_next() makes two calls
            lib.gpustarve_step_next.argtypes = [ctypes.c_uint64, ctypes.c_uint64, ctypes.c_uint32]
            lib.gpustarve_step_next.restype = None
        except AttributeError:
            pass
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


# What a step or fetch marker stands for: bits 24-31 of its loader argument,
# the loader itself bits 0-23 (docs/trace-format.md, "NVTX ranges and
# gpustarve markers"; trace/gs_trace.h, enum gs_mark_class).
PLAIN = 0      # a DataLoader's batches and steps, the C marker API
EXPLICIT = 1   # the program's own gpustarve.step() / gpustarve.fetch()
OPTIMIZER = 2  # step_end: an optimizer's step() returned
BACKWARD = 3   # step_end: a backward() returned
WAIT = 4       # fetch: the thread waits for a result another thread makes
ITEM = 5       # fetch: a pool thread runs one work item
COLLATE = 6    # fetch: the collate function makes a batch of its samples
LOAD = 7       # fetch: the thread maps a file to read (np.memmap's life)
FORWARD = 8    # fetch_end alone: the first module forward after an update


def marks(cls, loader=0):
    """The loader argument of a marker of class cls for loader `loader`."""
    return ((cls & 0xFF) << 24) | (int(loader) & 0xFFFFFF)


_trainer_tagged = False
_fork_hook = False


def tag_trainer(loader=0):
    """The `role trainer` record, once per process (the first fetch of a
    DataLoader or the first step of an optimizer says this process trains;
    a forked child that trains says so again)."""
    global _trainer_tagged, _fork_hook
    if _trainer_tagged:
        return
    _trainer_tagged = True
    if not _fork_hook and hasattr(os, "register_at_fork"):
        _fork_hook = True
        os.register_at_fork(after_in_child=_after_fork_child)
    role("trainer", 0, loader)


def _after_fork_child():
    global _trainer_tagged
    _trainer_tagged = False


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


def step_next(ended, step, loader=0):
    """Step `ended` ends and step `step` begins at one instant."""
    lb = lib()
    if lb is None:
        return
    f = getattr(lb, "gpustarve_step_next", None)
    if f is not None and f.argtypes:
        f(_u64(ended), _u64(step), _u32(loader))
    else:
        lb.gpustarve_step_end(_u64(ended), _u32(loader))
        lb.gpustarve_step_begin(_u64(step), _u32(loader))


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


# ---- the extension -------------------------------------------------------------

CWRAP_FILE = "gpustarve_cwrap.abi3.so"
_cwrap = None
_cwrap_why = None


class _DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]


def _library_dir(lb):
    """The folder of the libgpustarve.so this process preloaded."""
    dladdr = ctypes.CDLL(None).dladdr
    dladdr.argtypes = [ctypes.c_void_p, ctypes.POINTER(_DlInfo)]
    dladdr.restype = ctypes.c_int
    info = _DlInfo()
    addr = ctypes.cast(lb.gpustarve_active, ctypes.c_void_p).value
    if not dladdr(addr, ctypes.byref(info)) or not info.dli_fname:
        return None
    return os.path.dirname(os.fsdecode(info.dli_fname))


def _load_cwrap():
    global _cwrap, _cwrap_why
    _cwrap_why = "not traced"
    lb = lib()
    if lb is None:
        return
    if sys.implementation.name != "cpython" or sys.version_info < (3, 8):
        _cwrap_why = "%s %d.%d is not CPython >= 3.8" % ((sys.implementation.name,)
                                                        + tuple(sys.version_info[:2]))
        return
    if "t" in getattr(sys, "abiflags", ""):
        _cwrap_why = "a free-threaded CPython takes no limited-API extension"
        return
    try:
        d = _library_dir(lb)
        if d is None:
            _cwrap_why = "cannot find the folder of libgpustarve.so"
            return
        path = os.path.join(d, CWRAP_FILE)
        if not os.path.isfile(path):
            _cwrap_why = "%s is missing" % path
            return
        import importlib.machinery
        import importlib.util
        loader = importlib.machinery.ExtensionFileLoader("gpustarve._cwrap", path)
        spec = importlib.util.spec_from_file_location("gpustarve._cwrap", path, loader=loader)
        mod = importlib.util.module_from_spec(spec)
        loader.exec_module(mod)
        mod.Wrapper  # the one thing it must have
    except Exception as e:
        _cwrap_why = "cannot load %s: %s: %s" % (CWRAP_FILE, type(e).__name__, e)
        return
    _cwrap, _cwrap_why = mod, None


def cwrap():
    """The gpustarve._cwrap module, or None (then cwrap_why() says why)."""
    if _cwrap is None and _cwrap_why is None:
        _load_cwrap()
    return _cwrap


def cwrap_why():
    """Why cwrap() is None (None when it is not)."""
    cwrap()
    return _cwrap_why
