"""DataLoader instrumentation: step and batch-fetch markers, configuration,
worker roles, and the GPUSTARVE_* overrides.

Responsible for: wrapping, in the already-imported module
torch.utils.data.dataloader (handed in by gpustarve._hook),
  DataLoader.__init__                     the num_workers / pin_memory /
                                          prefetch_factor / persistent_workers
                                          overrides
  _BaseDataLoaderIter.__init__            loader id, configuration records
  _MultiProcessingDataLoaderIter.__init__ the worker_init_fn that tags workers
  _BaseDataLoaderIter.__next__            fetch and step markers, GPUSTARVE_STEPS
  _SingleProcessDataLoaderIter.__init__   its fetcher's collate_fn (no workers)
  _MultiProcessingDataLoaderIter._shutdown_workers
                                          a dropped iterator's step ends first
and, inside each worker process only (from the worker_init_fn wrapper), in
torch.utils.data._utils.fetch
  _MapDatasetFetcher.fetch, _IterableDatasetFetcher.fetch
                                          the worker's batch markers, and its
                                          fetcher's collate_fn (collate markers)
Works with torch 1.13 and 2.x (the same private names exist in both).

A fetcher's collate_fn is its own attribute, read by its fetch: gpustarve
wraps that attribute, once per fetcher, with fetch_begin/fetch_end of class
COLLATE indexed by the batch being made; the program's function object is
never changed.

Worker batch model (docs/python.md): in a process tagged loader_worker,
fetch_begin/fetch_end of batch i enclose the worker's loading of batch i
(the fetcher's fetch: dataset reads and collate), i = torch's index of the
batch within its iterator (the `idx` the worker loop received with it),
else the count of batches this worker loaded. A fetch that raises (the end
of an iterable dataset, an error) leaves its fetch_begin without fetch_end:
no batch was loaded.

Step model (docs/python.md): loader L's step k begins right before the
fetch of its batch k and ends right before the fetch of batch k+1 (so a step
is "wait for the batch, then use it"); the end of one and the begin of the
next are one marker call (step_next: one timestamp). A step also ends when its iterator is
dropped (a `break` out of the loop, the end of the program). The fetch that
finds the end of an epoch (StopIteration) closes the previous step and leaves
a step_begin without a step_end: that step never happened, and batch k is
fetched again by the next epoch under the same index. Indices count the
batches a loader has delivered, across epochs.

Each wrapper is gpustarve._frames.wrap() of the original with hooks that run
before and after it (frame-free with the C extension: docs/python.md,
"Invisible to the program").

Must never: import torch (it receives the module), raise from a wrapper
because of gpustarve itself, change what a DataLoader returns, or slow next()
by more than a few microseconds (nor a worker's batch: docs/performance.md,
"Worker batch markers").
"""
import itertools
import os
import sys
import threading
import weakref

from . import _frames, _native
from ._frames import hide, wrap

_lock = threading.Lock()
_next_loader_id = 0
_iter_tokens = itertools.count(1)
_steps_limit = 0
_overrides = {}
_warned = set()


def _warn(key, msg):
    if key in _warned:
        return
    _warned.add(key)
    try:
        sys.stderr.write("gpustarve: %s\n" % msg)
    except Exception:
        pass


# ---- environment -------------------------------------------------------------

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def _env_int(name, lo):
    """GPUSTARVE_<name> as a number >= lo; None when unset or not one (warned)."""
    v = os.environ.get("GPUSTARVE_" + name, "").strip()
    if not v:
        return None
    try:
        n = int(v)
        if n >= lo:
            return n
    except ValueError:
        pass
    _warn(name, "GPUSTARVE_%s=%s is not a number >= %d; ignored" % (name, v, lo))
    return None


def _env_bool(name):
    """GPUSTARVE_<name> as True / False; None when unset or not one (warned)."""
    v = os.environ.get("GPUSTARVE_" + name, "").strip().lower()
    if not v:
        return None
    if v in _TRUE or v in _FALSE:
        return v in _TRUE
    _warn(name, "GPUSTARVE_%s=%s is not 0 or 1; ignored" % (name, v))
    return None


def _read_environment():
    global _steps_limit
    o = {}
    for key, v in (("num_workers", _env_int("NUM_WORKERS", 0)),
                   ("pin_memory", _env_bool("PIN_MEMORY")),
                   ("prefetch_factor", _env_int("PREFETCH_FACTOR", 1)),
                   ("persistent_workers", _env_bool("PERSISTENT_WORKERS"))):
        if v is not None:
            o[key] = v
    _steps_limit = _env_int("STEPS", 1) or 0
    _overrides.clear()
    _overrides.update(o)


# ---- per-loader state --------------------------------------------------------

class _LoaderState(object):
    """What gpustarve keeps for one DataLoader (in its __dict__)."""
    __slots__ = ("lid", "next", "open", "open_tid", "open_owner", "done", "cfg", "index")

    def __init__(self, lid):
        self.lid = lid
        self.next = 0            # batches delivered so far = index of the next one
        self.open = None         # index of the open step, or None
        self.open_tid = 0        # thread that opened it
        self.open_owner = 0      # token of the iterator that opened it
        self.done = 0            # steps completed (step_end written)
        self.cfg = None          # last configuration written
        self.index = None        # [batch being fetched], for the collate markers (no workers)

    def __reduce__(self):  # a pickled DataLoader gets a fresh id in its new home
        return (_fresh_state, ())


def _fresh_state():
    return None


def _loader_state(loader):
    global _next_loader_id
    d = loader.__dict__
    st = d.get("_gpustarve_state")
    if st is None:
        with _lock:
            st = d.get("_gpustarve_state")
            if st is None:
                st = _LoaderState(_next_loader_id)
                _next_loader_id += 1
                d["_gpustarve_state"] = st
    return st


def _close_step(st):
    k = st.open
    st.open = None
    st.done += 1
    _native.step_end(k, st.lid)


def _iterator_gone(st, token):
    """The iterator that opened st's step is gone: the step ends here."""
    try:
        if st.open is not None and st.open_owner == token and \
                st.open_tid == threading.get_ident():
            _close_step(st)
    except Exception:
        pass


# ---- configuration -------------------------------------------------------------

def _qualname(cls):
    mod = getattr(cls, "__module__", "") or ""
    name = getattr(cls, "__qualname__", None) or getattr(cls, "__name__", "?")
    return name if mod in ("", "__main__", "builtins") else mod + "." + name


def _context_name(loader):
    ctx = getattr(loader, "multiprocessing_context", None)
    if isinstance(ctx, str):
        return ctx
    if ctx is not None:
        name = getattr(ctx, "_name", None)
        if name is None:
            try:
                name = ctx.get_start_method()
            except Exception:
                name = type(ctx).__name__
        return str(name)
    # no context given: torch uses the process-wide default
    import multiprocessing
    name = multiprocessing.get_start_method(allow_none=True)
    if name is None:
        try:  # the default start method, without fixing it (get_context would)
            name = multiprocessing.context._default_context._default_context._name
        except Exception:
            name = "default"
    return name


def _iterable(dataset):
    """Whether dataset is a torch IterableDataset (each worker iterates its
    own copy of it); None when torch.utils.data is not loaded."""
    data = sys.modules.get("torch.utils.data")
    cls = getattr(data, "IterableDataset", None)
    return isinstance(dataset, cls) if isinstance(cls, type) else None


_sharing_applied = False


def _apply_sharing_strategy(quiet=False):
    """GPUSTARVE_SHARING_STRATEGY: torch.multiprocessing's strategy for the
    workers' tensors, set once, as the first loader's workers start (an
    override, like GPUSTARVE_NUM_WORKERS: over the program's own).
    RATIONALE: not as torch.utils.data loads: torch 2.x imports it while
    torch.multiprocessing is still initialising, which then sets its
    default over ours. quiet: a worker, where the trainer has warned."""
    global _sharing_applied
    if _sharing_applied:
        return
    _sharing_applied = True
    v = os.environ.get("GPUSTARVE_SHARING_STRATEGY", "").strip()
    mp = sys.modules.get("torch.multiprocessing")
    if not v or mp is None:
        return
    try:
        known = sorted(mp.get_all_sharing_strategies())
        if v in known:
            mp.set_sharing_strategy(v)
            return
    except Exception as e:
        if not quiet:
            _warn("sharing", "GPUSTARVE_SHARING_STRATEGY=%s: %s; ignored" % (v, e))
        return
    if not quiet:
        _warn("sharing", "GPUSTARVE_SHARING_STRATEGY=%s is not one of %s; ignored"
              % (v, ", ".join(known)))


def _sharing_strategy():
    """torch.multiprocessing's strategy for sharing tensors between
    processes (file_descriptor, file_system); "none" when unknown."""
    mp = sys.modules.get("torch.multiprocessing")
    try:
        return str(mp.get_sharing_strategy()) if mp is not None else "none"
    except Exception:
        return "none"


def _num(v):
    if v is None:
        return "none"
    if isinstance(v, bool):
        return "1" if v else "0"
    return str(v)


def _config_items(loader, it):
    nw = getattr(loader, "num_workers", 0) or 0
    items = [
        ("num_workers", _num(nw)),
        ("pin_memory", _num(bool(getattr(loader, "pin_memory", False)))),
        ("pin_memory_effective", _num(bool(getattr(it, "_pin_memory", False)))),
        ("batch_size", _num(getattr(loader, "batch_size", None))),
        ("prefetch_factor", _num(getattr(loader, "prefetch_factor", None) if nw > 0 else None)),
        ("persistent_workers", _num(bool(getattr(loader, "persistent_workers", False)))),
        ("multiprocessing_context", _context_name(loader) if nw > 0 else "none"),
        ("sharing_strategy", _sharing_strategy() if nw > 0 else "none"),
        ("dataset", _qualname(type(getattr(loader, "dataset", None)))),
        ("dataset_iterable", _num(_iterable(getattr(loader, "dataset", None)))),
        ("sampler", _qualname(type(getattr(loader, "sampler", None)))),
        ("drop_last", _num(bool(getattr(loader, "drop_last", False)))),
        ("timeout", _num(getattr(loader, "timeout", 0))),
    ]
    torch = sys.modules.get("torch")
    if torch is not None:
        items.append(("torch_version", str(getattr(torch, "__version__", "?"))))
    items.extend(_distributed_items())
    for k, v in sorted(loader.__dict__.get("_gpustarve_requested", {}).items()):
        items.append(("requested." + k, _num(v)))
    if _steps_limit:
        items.append(("gpustarve_steps", str(_steps_limit)))
    return tuple(items)


def _distributed_items():
    """The process's rank and world size when torch.distributed is set up: a
    program started by torch.multiprocessing.spawn passes its rank to
    init_process_group, not through the environment the trace header reads
    (docs/python.md). Never imports torch.distributed itself."""
    dist = sys.modules.get("torch.distributed")
    try:
        if dist is None or not dist.is_available() or not dist.is_initialized():
            return []
        return [("distributed_rank", str(int(dist.get_rank()))),
                ("distributed_world_size", str(int(dist.get_world_size())))]
    except Exception:
        return []


def _write_config(loader, it, st):
    items = _config_items(loader, it)
    if items == st.cfg:
        return
    st.cfg = items
    for k, v in items:
        _native.config(k, v, st.lid)


# ---- worker tagging ------------------------------------------------------------

def _worker_init(fn, lid):
    """The worker_init_fn gpustarve gives a loader's workers: tags the worker
    (and wraps its fetchers), then calls the program's own fn (if any).
    Pickles as this call, so spawn/forkserver workers rebuild it."""
    def tag(args, kwargs):
        try:
            _native.role("loader_worker", args[0] if args else 0, lid)
            _mark_worker_batches(lid)
            _worker_sharing(lid)
        except Exception:
            pass
        return None
    w = wrap(fn if fn is not None else _no_worker_init, before=hide(tag),
             reduce=(_worker_init, (fn, lid)))
    w._gpustarve_worker_init = True
    return w


def _worker_sharing(lid):
    """In a worker: GPUSTARVE_SHARING_STRATEGY applied in this process too,
    and the strategy it sends its tensors with recorded as its own config
    sharing_strategy (docs/python.md). RATIONALE: the sender's strategy
    decides how a tensor travels, and a spawn or forkserver worker has a
    torch.multiprocessing of its own, at its default whatever the trainer
    set; a forked one inherits the trainer's (and _sharing_applied)."""
    _apply_sharing_strategy(quiet=True)
    _native.config("sharing_strategy", _sharing_strategy(), lid)


def _no_worker_init(worker_id):
    return None


_no_worker_init = hide(_no_worker_init)


# ---- worker batch markers ------------------------------------------------------

def _mark_worker_batches(lid):
    """In a worker process of loader lid: wrap the fetchers' fetch (their
    classes are this process's own copy: a forked worker's changes never
    reach the trainer)."""
    lb = _native.lib()
    mod = sys.modules.get("torch.utils.data._utils.fetch")
    if lb is None or mod is None:
        return
    for name in ("_MapDatasetFetcher", "_IterableDatasetFetcher"):
        cls = getattr(mod, name, None)
        if cls is not None:
            _patch(cls, "fetch", lambda orig: _wrap_fetch(orig, lid, lb))


def _mark_collate(fetcher, index, lid, lb):
    """The fetcher's collate_fn (an attribute of this fetcher object, read
    by its fetch) with fetch_begin/fetch_end of class COLLATE around each
    call, indexed by index[0], the batch being made (module docstring).
    Once per fetcher; never the program's own function object."""
    fn = fetcher.__dict__.get("collate_fn")
    if fn is None or getattr(fn, "_gpustarve_wrapper", False):
        return
    fetch_begin, fetch_end = lb.gpustarve_fetch_begin, lb.gpustarve_fetch_end
    clid = _native.marks(_native.COLLATE, lid)

    def before(args, kwargs):
        i = index[0]
        fetch_begin(i, clid)
        return ((i, clid), None, None)

    def on_error(ctx, args):
        fetch_end(*ctx)
    fetcher.collate_fn = wrap(fn, hide(before), fetch_end, hide(on_error), after_star=True)


def _wrap_fetch(orig, lid, lb):
    """fetch with fetch_begin/fetch_end around it (module docstring). The
    ctypes functions are called directly: this runs once per batch."""
    fetch_begin, fetch_end = lb.gpustarve_fetch_begin, lb.gpustarve_fetch_end
    getframe = sys._getframe
    hidden = _frames.HIDDEN_FILE
    loaded = itertools.count()
    mask = 0xFFFFFFFFFFFFFFFF
    index = [0]  # the batch being loaded: the collate markers' index

    def before(args, kwargs):
        i = None
        try:
            f = getframe(1)  # torch's worker loop, which called fetch
            while f.f_code.co_filename == hidden:  # the Python wrapper's, without the extension
                f = f.f_back
            if f.f_code.co_name == "_worker_loop":
                i = f.f_locals.get("idx")
                i = int(i) & mask if i is not None else None
        except Exception:
            i = None
        if i is None:
            i = next(loaded)
        index[0] = i
        if "_gpustarve_collate" not in args[0].__dict__:
            args[0].__dict__["_gpustarve_collate"] = True
            try:
                _mark_collate(args[0], index, lid, lb)
            except Exception:
                pass
        fetch_begin(i, lid)
        return ((i, lid), None, None)
    # after: fetch_end(i, lid), called directly; a fetch that raises loaded
    # no batch: its fetch_begin stays open
    return wrap(orig, hide(before), fetch_end, after_star=True)


# ---- wrappers ------------------------------------------------------------------

def _override_worker_options(a, requested):
    """prefetch_factor and persistent_workers, which torch takes only with
    workers: without any they stay as the program has them (and the
    configuration records say so)."""
    if not a.get("num_workers", 0):
        if "prefetch_factor" in _overrides or "persistent_workers" in _overrides:
            _warn("nw0", "GPUSTARVE_PREFETCH_FACTOR / GPUSTARVE_PERSISTENT_WORKERS: a DataLoader "
                         "without workers takes neither; left as they are")
        return
    pf = _overrides.get("prefetch_factor")
    if pf is not None and a.get("prefetch_factor") != pf:
        requested["prefetch_factor"] = a.get("prefetch_factor")
        a["prefetch_factor"] = pf
    pw = _overrides.get("persistent_workers")
    if pw is not None and bool(a.get("persistent_workers", False)) != pw:
        requested["persistent_workers"] = bool(a.get("persistent_workers", False))
        a["persistent_workers"] = pw


def _wrap_loader_init(orig):
    """DataLoader.__init__ with the GPUSTARVE_* overrides applied."""
    def before(args, kwargs):
        if not _overrides:
            return None
        try:
            import inspect
            ba = inspect.signature(orig).bind(*args, **(kwargs or {}))
        except (TypeError, ValueError):
            return None  # torch reports the program's own error
        a = ba.arguments
        requested = {}
        nw = _overrides.get("num_workers")
        if nw is not None and a.get("num_workers", 0) != nw:
            requested["num_workers"] = a.get("num_workers", 0)
            a["num_workers"] = nw
            if nw == 0:
                # options that torch refuses without workers go back to their defaults
                for name in ("prefetch_factor", "multiprocessing_context", "timeout"):
                    a.pop(name, None)
                if a.get("persistent_workers"):
                    requested["persistent_workers"] = True
                    a["persistent_workers"] = False
        pm = _overrides.get("pin_memory")
        if pm is not None and bool(a.get("pin_memory", False)) != pm:
            requested["pin_memory"] = bool(a.get("pin_memory", False))
            a["pin_memory"] = pm
        _override_worker_options(a, requested)
        return (requested or None, ba.args, ba.kwargs)

    def after(requested, args, r):
        if requested:
            args[0].__dict__["_gpustarve_requested"] = requested
    return wrap(orig, hide(before), hide(after))


def _iterator_loader(args, kwargs):
    """The loader an iterator's __init__(self, loader, ...) was given."""
    if len(args) > 1:
        return args[1]
    return (kwargs or {}).get("loader")


def _wrap_iter_init(orig):
    def before(args, kwargs):
        return (_iterator_loader(args, kwargs), None, None)

    def after(loader, args, r):
        try:
            st = _loader_state(loader)
            token = next(_iter_tokens)
            it = args[0]
            it.__dict__["_gpustarve_state"] = st
            it.__dict__["_gpustarve_token"] = token
            weakref.finalize(it, _iterator_gone, st, token)
            _write_config(loader, it, st)
        except Exception as e:
            _warn("iter", "cannot follow a DataLoader: %s: %s" % (type(e).__name__, e))
    return wrap(orig, hide(before), hide(after))


def _wrap_mp_iter_init(orig):
    """The loader's worker_init_fn is gpustarve's while its workers start
    (and GPUSTARVE_SHARING_STRATEGY applied before the first start)."""
    def before(args, kwargs):
        _apply_sharing_strategy()
        loader = _iterator_loader(args, kwargs)
        user_fn = getattr(loader, "worker_init_fn", None)
        if getattr(user_fn, "_gpustarve_worker_init", False):
            return None
        try:
            loader.worker_init_fn = _worker_init(user_fn, _loader_state(loader).lid)
        except Exception:
            return None
        return ((loader, user_fn), None, None)

    def restore(swapped, args, r=None):
        if swapped is not None:
            try:
                swapped[0].worker_init_fn = swapped[1]
            except Exception:
                pass
    restore = hide(restore)
    return wrap(orig, hide(before), restore, restore)


def _wrap_single_iter_init(orig):
    """Without workers the training thread collates: its iterator's
    fetcher's collate_fn is marked, indexed by the batch next() fetches."""
    def after(ctx, args, r=None):
        try:
            it = args[0]
            st = it.__dict__.get("_gpustarve_state")
            fetcher = it.__dict__.get("_dataset_fetcher")
            lb = _native.lib()
            if st is None or fetcher is None or lb is None:
                return
            index = st.index = [st.next]
            _mark_collate(fetcher, index, st.lid, lb)
        except Exception:
            pass
    return wrap(orig, after=hide(after))


def _wrap_shutdown(orig):
    """The open step ends before the iterator stops its workers: joining
    them is the loader's teardown, not the training step's (the finalizer
    that ends a dropped iterator's step runs only after __del__ has
    stopped them)."""
    def before(args, kwargs):
        it = args[0]
        st = it.__dict__.get("_gpustarve_state")
        if st is not None:
            _iterator_gone(st, it.__dict__.get("_gpustarve_token", 0))
        return None
    return wrap(orig, hide(before))


def _end_run(st):
    _warn("end", "GPUSTARVE_STEPS=%d: loader %d completed %d steps; ending the program"
          % (_steps_limit, st.lid, st.done))
    raise SystemExit(0)


def _wrap_next(orig):
    step_begin, step_next = _native.step_begin, _native.step_next
    fetch_begin, fetch_end = _native.fetch_begin, _native.fetch_end
    get_ident = threading.get_ident

    tag_trainer = _native.tag_trainer

    def before(args, kwargs):
        st = args[0].__dict__.get("_gpustarve_state")
        if st is None:
            return None
        lid = st.lid
        tag_trainer(lid)
        k = st.next
        prev = st.open
        if prev is not None:
            st.open = None
            st.done += 1
        if _steps_limit and st.done >= _steps_limit:
            if prev is not None:
                _native.step_end(prev, lid)
            _end_run(st)
        if st.index is not None:
            st.index[0] = k
        if prev is not None:
            step_next(prev, k, lid)  # one instant: no time between the steps
        else:
            step_begin(k, lid)
        fetch_begin(k, lid)
        return ((st, k), None, None)

    def after(ctx, args, data):
        if ctx is None:
            return
        st, k = ctx
        fetch_end(k, st.lid)
        st.next = k + 1
        st.open = k
        st.open_tid = get_ident()
        st.open_owner = args[0].__dict__.get("_gpustarve_token", 0)

    def on_error(ctx, args):
        if ctx is not None:  # StopIteration (end of epoch) or an error
            fetch_end(ctx[1], ctx[0].lid)
    return wrap(orig, hide(before), hide(after), hide(on_error))


def _patch(cls, name, make):
    orig = cls.__dict__.get(name)
    if orig is None or getattr(orig, "_gpustarve_wrapper", False):
        return False
    setattr(cls, name, make(orig))
    return True


def instrument(module):
    """Wrap the DataLoader classes of torch.utils.data.dataloader (once)."""
    if getattr(module, "_gpustarve_instrumented", False):
        return
    module._gpustarve_instrumented = True
    _read_environment()
    if not _frames.frame_free():
        _warn("cwrap", "Python wrappers: a stack walked from inside a DataLoader shows "
              "gpustarve's frames (%s)" % _frames.cwrap_why())
    dl = getattr(module, "DataLoader", None)
    base = getattr(module, "_BaseDataLoaderIter", None)
    single = getattr(module, "_SingleProcessDataLoaderIter", None)
    mp = getattr(module, "_MultiProcessingDataLoaderIter", None)
    if dl is None or base is None:
        _warn("names", "this torch has no DataLoader/_BaseDataLoaderIter; steps are not marked")
        return
    _patch(dl, "__init__", _wrap_loader_init)
    _patch(base, "__init__", _wrap_iter_init)
    _patch(base, "__next__", _wrap_next)
    if single is not None:
        _patch(single, "__init__", _wrap_single_iter_init)
    if mp is not None:
        _patch(mp, "__init__", _wrap_mp_iter_init)
        _patch(mp, "_shutdown_workers", _wrap_shutdown)
