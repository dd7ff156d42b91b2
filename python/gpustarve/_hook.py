"""The import hook: wait for the program to import the modules gpustarve
instruments, then let the module that knows each instrument it.

Responsible for: a meta path finder that recognises the names in TARGETS
(torch's DataLoader, optimizer, autograd, nn.Module and GradScaler modules,
concurrent.futures, numpy's memmap), lets the other finders find each, and
wraps its loader so the module is instrumented right after it has executed;
or, for a module already imported, instrumenting it at once. The finder
stays first on sys.meta_path; for any other name it answers None at once.

Must never: import torch or numpy (a program that never imports them must
run exactly as before), change how any other module is found or loaded, or
leave a module with a foreign __loader__ (inspect and torch.jit read it).
"""
import sys

from ._frames import hide, wrap

# module name -> (gpustarve module, its function that instruments it)
TARGETS = {
    "torch.utils.data.dataloader": ("_torch", "instrument"),
    "torch.optim.optimizer": ("_optim", "instrument_optimizer"),
    "torch.autograd": ("_optim", "instrument_autograd"),
    "torch.nn.modules.module": ("_forward", "instrument_module"),
    "torch.amp.grad_scaler": ("_optim", "instrument_scaler"),
    "torch.cuda.amp.grad_scaler": ("_optim", "instrument_scaler"),
    "concurrent.futures._base": ("_futures", "instrument_base"),
    "concurrent.futures.thread": ("_futures", "instrument_thread"),
    "numpy.core.memmap": ("_numpy", "instrument"),
    "numpy._core.memmap": ("_numpy", "instrument"),
}


class _PatchingLoader:
    """Delegates to the real loader; instruments the module after exec. Its
    exec_module is gpustarve._frames.wrap() of the real one (the module's
    own code runs under it: with the extension no gpustarve frame is on the
    stack then, else warnings and tracebacks skip the Python wrapper's)."""

    def __init__(self, inner):
        self._inner = inner

        def restore(ctx, args, r=None):
            # the module keeps the loader it would have had without us
            module = args[0]
            try:
                module.__loader__ = inner
                if getattr(module, "__spec__", None) is not None:
                    module.__spec__.loader = inner
            except Exception:
                pass

        def loaded(ctx, args, r):
            restore(ctx, args)
            _instrument(args[0])
        self.exec_module = wrap(inner.exec_module, after=hide(loaded), on_error=hide(restore))

    def create_module(self, spec):
        create = getattr(self._inner, "create_module", None)
        return create(spec) if create is not None else None

    def __getattr__(self, name):  # get_source, get_filename, is_package, ...
        return getattr(self._inner, name)


# create_module stays a (hidden) Python method: it runs none of the module's
# code (a source module's is the default, None), and the inner loader may
# have none to wrap
_PatchingLoader.create_module = hide(_PatchingLoader.create_module)


class _Finder:
    """Meta path finder for the names in TARGETS."""

    def __init__(self):
        self._busy = False

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in TARGETS or self._busy:
            return None
        self._busy = True
        try:
            spec = None
            for finder in list(sys.meta_path):
                if finder is self:
                    continue
                find = getattr(finder, "find_spec", None)
                if find is None:
                    continue
                spec = find(fullname, path, target)
                if spec is not None:
                    break
            if spec is None or spec.loader is None or \
                    not hasattr(spec.loader, "exec_module"):
                return spec
            spec.loader = _PatchingLoader(spec.loader)
            return spec
        finally:
            self._busy = False

    # Python < 3.4 style API, for finders that still call it.
    def find_module(self, fullname, path=None):
        return None

    def invalidate_caches(self):
        pass


_finder = None
_done = set()


def _instrument(module):
    name = getattr(module, "__name__", None)
    what = TARGETS.get(name)
    if what is None or name in _done:
        return
    _done.add(name)
    try:
        mod = __import__("gpustarve." + what[0], fromlist=[what[1]])
        getattr(mod, what[1])(module)
    except Exception as e:  # never break the program's import
        try:
            sys.stderr.write("gpustarve: cannot instrument %s: %s: %s\n"
                             % (name, type(e).__name__, e))
        except Exception:
            pass


def install():
    """Instrument the targets already loaded now, the others when imported."""
    global _finder
    for name in TARGETS:
        mod = sys.modules.get(name)
        spec = getattr(mod, "__spec__", None)
        if spec is not None and not getattr(spec, "_initializing", False):
            _instrument(mod)
    if _finder is None:
        _finder = _Finder()
        sys.meta_path.insert(0, _finder)
